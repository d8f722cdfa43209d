from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.task_output_json_type_0 import TaskOutputJsonType0


T = TypeVar("T", bound="TaskOutput")


@_attrs_define
class TaskOutput:
    """A task's or a run's output: the raw text and, with an output schema, the parsed JSON.

    Attributes:
        raw (str):
        full_bytes (int | None | Unset): Set only where a view cuts a long output (a run's resource, its lists and
            waits): the
            whole output's length in bytes. `raw` then holds its beginning and a marker, `json` is
            left out, and `GET /v1/runs/{id}/tasks/{name}` serves the output whole.
        json (None | TaskOutputJsonType0 | Unset):
    """

    raw: str
    full_bytes: int | None | Unset = UNSET
    json: None | TaskOutputJsonType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_output_json_type_0 import TaskOutputJsonType0

        raw = self.raw

        full_bytes: int | None | Unset
        if isinstance(self.full_bytes, Unset):
            full_bytes = UNSET
        else:
            full_bytes = self.full_bytes

        json: dict[str, Any] | None | Unset
        if isinstance(self.json, Unset):
            json = UNSET
        elif isinstance(self.json, TaskOutputJsonType0):
            json = self.json.to_dict()
        else:
            json = self.json

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "raw": raw,
            }
        )
        if full_bytes is not UNSET:
            field_dict["full_bytes"] = full_bytes
        if json is not UNSET:
            field_dict["json"] = json

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_output_json_type_0 import TaskOutputJsonType0

        d = dict(src_dict)
        raw = d.pop("raw")

        def _parse_full_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        full_bytes = _parse_full_bytes(d.pop("full_bytes", UNSET))

        def _parse_json(data: object) -> None | TaskOutputJsonType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                json_type_0 = TaskOutputJsonType0.from_dict(data)

                return json_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskOutputJsonType0 | Unset, data)

        json = _parse_json(d.pop("json", UNSET))

        task_output = cls(
            raw=raw,
            full_bytes=full_bytes,
            json=json,
        )

        task_output.additional_properties = d
        return task_output

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
