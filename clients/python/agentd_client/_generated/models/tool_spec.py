from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.http_tool_spec import HttpToolSpec
    from ..models.tool_spec_parameters import ToolSpecParameters


T = TypeVar("T", bound="ToolSpec")


@_attrs_define
class ToolSpec:
    """A tool declared by the crew: an HTTP endpoint the agents may call.

    Attributes:
        description (str):
        http (HttpToolSpec): Where an HTTP tool sends its arguments.
        name (str): Letters, digits, `_` and `-`, at most 64 (the providers' function-name rule); not a
            built-in tool's name.
        parameters (ToolSpecParameters): JSON schema of the arguments (`"type": "object"`; 2020-12 unless `$schema` says
            otherwise; `$ref`s resolve inside it only).
        cache (bool | Unset): Cache results per run, keyed by arguments.
        idempotent (bool | None | Unset): Safe to call again after a crash interrupted a call (default: true for GET,
            false for
            POST).
        max_usage_count (int | None | Unset):
        requires_approval (bool | Unset): Each call waits for a person's approval before it runs (the run is
            `awaiting_input`).
        result_as_answer (bool | Unset): The tool's result becomes the task's final answer.
    """

    description: str
    http: HttpToolSpec
    name: str
    parameters: ToolSpecParameters
    cache: bool | Unset = UNSET
    idempotent: bool | None | Unset = UNSET
    max_usage_count: int | None | Unset = UNSET
    requires_approval: bool | Unset = UNSET
    result_as_answer: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        http = self.http.to_dict()

        name = self.name

        parameters = self.parameters.to_dict()

        cache = self.cache

        idempotent: bool | None | Unset
        if isinstance(self.idempotent, Unset):
            idempotent = UNSET
        else:
            idempotent = self.idempotent

        max_usage_count: int | None | Unset
        if isinstance(self.max_usage_count, Unset):
            max_usage_count = UNSET
        else:
            max_usage_count = self.max_usage_count

        requires_approval = self.requires_approval

        result_as_answer = self.result_as_answer

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "description": description,
                "http": http,
                "name": name,
                "parameters": parameters,
            }
        )
        if cache is not UNSET:
            field_dict["cache"] = cache
        if idempotent is not UNSET:
            field_dict["idempotent"] = idempotent
        if max_usage_count is not UNSET:
            field_dict["max_usage_count"] = max_usage_count
        if requires_approval is not UNSET:
            field_dict["requires_approval"] = requires_approval
        if result_as_answer is not UNSET:
            field_dict["result_as_answer"] = result_as_answer

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.http_tool_spec import HttpToolSpec
        from ..models.tool_spec_parameters import ToolSpecParameters

        d = dict(src_dict)
        description = d.pop("description")

        http = HttpToolSpec.from_dict(d.pop("http"))

        name = d.pop("name")

        parameters = ToolSpecParameters.from_dict(d.pop("parameters"))

        cache = d.pop("cache", UNSET)

        def _parse_idempotent(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        idempotent = _parse_idempotent(d.pop("idempotent", UNSET))

        def _parse_max_usage_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_usage_count = _parse_max_usage_count(d.pop("max_usage_count", UNSET))

        requires_approval = d.pop("requires_approval", UNSET)

        result_as_answer = d.pop("result_as_answer", UNSET)

        tool_spec = cls(
            description=description,
            http=http,
            name=name,
            parameters=parameters,
            cache=cache,
            idempotent=idempotent,
            max_usage_count=max_usage_count,
            requires_approval=requires_approval,
            result_as_answer=result_as_answer,
        )

        return tool_spec
