from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AliasMoveBody")


@_attrs_define
class AliasMoveBody:
    """The body of `PUT /v1/crews/{name}/aliases/{alias}`.

    Attributes:
        version (int): The version the alias is to name.
        expected_version (int | None | Unset): Move the alias only if it names this version now (else 409, nothing
            moved): a promotion
            that does not undo someone else's.
    """

    version: int
    expected_version: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        version = self.version

        expected_version: int | None | Unset
        if isinstance(self.expected_version, Unset):
            expected_version = UNSET
        else:
            expected_version = self.expected_version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "version": version,
            }
        )
        if expected_version is not UNSET:
            field_dict["expected_version"] = expected_version

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        version = d.pop("version")

        def _parse_expected_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expected_version = _parse_expected_version(d.pop("expected_version", UNSET))

        alias_move_body = cls(
            version=version,
            expected_version=expected_version,
        )

        return alias_move_body
