from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Chunking")


@_attrs_define
class Chunking:
    """How a base's documents are cut: at most `max_tokens` per chunk (cl100k tokens), the next
    chunk of a section repeating the last `overlap` tokens of the one before.

        Attributes:
            max_tokens (int):
            overlap (int | Unset): Less than `max_tokens`.
    """

    max_tokens: int
    overlap: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_tokens = self.max_tokens

        overlap = self.overlap

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max_tokens": max_tokens,
            }
        )
        if overlap is not UNSET:
            field_dict["overlap"] = overlap

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        max_tokens = d.pop("max_tokens")

        overlap = d.pop("overlap", UNSET)

        chunking = cls(
            max_tokens=max_tokens,
            overlap=overlap,
        )

        return chunking
