from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="KnowledgeUse")


@_attrs_define
class KnowledgeUse:
    """A knowledge base and how a task's prompt uses it.

    Attributes:
        name (str): The base's name.
        k (int | None | Unset): Hits appended to a task's prompt (default 5).
        min_score (float | None | Unset): Hits scoring less are left out.
    """

    name: str
    k: int | None | Unset = UNSET
    min_score: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        k: int | None | Unset
        if isinstance(self.k, Unset):
            k = UNSET
        else:
            k = self.k

        min_score: float | None | Unset
        if isinstance(self.min_score, Unset):
            min_score = UNSET
        else:
            min_score = self.min_score

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if k is not UNSET:
            field_dict["k"] = k
        if min_score is not UNSET:
            field_dict["min_score"] = min_score

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_k(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        k = _parse_k(d.pop("k", UNSET))

        def _parse_min_score(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        min_score = _parse_min_score(d.pop("min_score", UNSET))

        knowledge_use = cls(
            name=name,
            k=k,
            min_score=min_score,
        )

        return knowledge_use
