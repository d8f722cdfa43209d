from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.expectations_json_schema_type_0 import ExpectationsJsonSchemaType0


T = TypeVar("T", bound="Expectations")


@_attrs_define
class Expectations:
    """What a case's output should be. Every expectation given must hold for the case to pass.

    Attributes:
        contains (list[str] | Unset): Texts the output contains, each.
        exact (None | str | Unset): The output, exactly (leading and trailing whitespace aside).
        json_schema (ExpectationsJsonSchemaType0 | None | Unset): A JSON Schema the output, read as JSON, satisfies.
        rubric (None | str | Unset): What a good output does, in words (at most 4,000 characters): a judge model reads
            the
            case's inputs and output and decides, in the case's run (`evaluation.judged`).
    """

    contains: list[str] | Unset = UNSET
    exact: None | str | Unset = UNSET
    json_schema: ExpectationsJsonSchemaType0 | None | Unset = UNSET
    rubric: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.expectations_json_schema_type_0 import ExpectationsJsonSchemaType0

        contains: list[str] | Unset = UNSET
        if not isinstance(self.contains, Unset):
            contains = self.contains

        exact: None | str | Unset
        if isinstance(self.exact, Unset):
            exact = UNSET
        else:
            exact = self.exact

        json_schema: dict[str, Any] | None | Unset
        if isinstance(self.json_schema, Unset):
            json_schema = UNSET
        elif isinstance(self.json_schema, ExpectationsJsonSchemaType0):
            json_schema = self.json_schema.to_dict()
        else:
            json_schema = self.json_schema

        rubric: None | str | Unset
        if isinstance(self.rubric, Unset):
            rubric = UNSET
        else:
            rubric = self.rubric

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if contains is not UNSET:
            field_dict["contains"] = contains
        if exact is not UNSET:
            field_dict["exact"] = exact
        if json_schema is not UNSET:
            field_dict["json_schema"] = json_schema
        if rubric is not UNSET:
            field_dict["rubric"] = rubric

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.expectations_json_schema_type_0 import ExpectationsJsonSchemaType0

        d = dict(src_dict)
        contains = cast(list[str], d.pop("contains", UNSET))

        def _parse_exact(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        exact = _parse_exact(d.pop("exact", UNSET))

        def _parse_json_schema(
            data: object,
        ) -> ExpectationsJsonSchemaType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                json_schema_type_0 = ExpectationsJsonSchemaType0.from_dict(data)

                return json_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExpectationsJsonSchemaType0 | None | Unset, data)

        json_schema = _parse_json_schema(d.pop("json_schema", UNSET))

        def _parse_rubric(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        rubric = _parse_rubric(d.pop("rubric", UNSET))

        expectations = cls(
            contains=contains,
            exact=exact,
            json_schema=json_schema,
            rubric=rubric,
        )

        return expectations
