from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SecretRef")


@_attrs_define
class SecretRef:
    """A reference to a stored secret (`PUT /v1/secrets/{name}`).

    Attributes:
        secret (str): The secret's name.
        prefix (str | Unset): Text sent before the value (`"Bearer "`).
    """

    secret: str
    prefix: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        secret = self.secret

        prefix = self.prefix

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "secret": secret,
            }
        )
        if prefix is not UNSET:
            field_dict["prefix"] = prefix

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        secret = d.pop("secret")

        prefix = d.pop("prefix", UNSET)

        secret_ref = cls(
            secret=secret,
            prefix=prefix,
        )

        return secret_ref
