from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.tool_call_approval_type_0 import ToolCallApprovalType0
    from ..models.tool_call_arguments import ToolCallArguments


T = TypeVar("T", bound="ToolCall")


@_attrs_define
class ToolCall:
    """One tool call.

    Attributes:
        arguments (ToolCallArguments):
        cached (bool):
        id (str):
        started_at (datetime.datetime):
        status (str): `running`, `awaiting_approval` (its decision is due), `succeeded` or `failed`.
        tool (str):
        agent (None | str | Unset):
        approval (None | ToolCallApprovalType0 | Unset): For a call of a tool that requires approval: `{"state":
            "pending" | "deferred" |
            "approved" | "rejected", "arguments"?, "reason"?}` (deferred: it needs no decision but
            runs with its round's calls that do).
        error (None | str | Unset):
        finished_at (datetime.datetime | None | Unset):
        result (None | str | Unset):
        task (None | str | Unset):
    """

    arguments: ToolCallArguments
    cached: bool
    id: str
    started_at: datetime.datetime
    status: str
    tool: str
    agent: None | str | Unset = UNSET
    approval: None | ToolCallApprovalType0 | Unset = UNSET
    error: None | str | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    result: None | str | Unset = UNSET
    task: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.tool_call_approval_type_0 import ToolCallApprovalType0

        arguments = self.arguments.to_dict()

        cached = self.cached

        id = self.id

        started_at = self.started_at.isoformat()

        status = self.status

        tool = self.tool

        agent: None | str | Unset
        if isinstance(self.agent, Unset):
            agent = UNSET
        else:
            agent = self.agent

        approval: dict[str, Any] | None | Unset
        if isinstance(self.approval, Unset):
            approval = UNSET
        elif isinstance(self.approval, ToolCallApprovalType0):
            approval = self.approval.to_dict()
        else:
            approval = self.approval

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        result: None | str | Unset
        if isinstance(self.result, Unset):
            result = UNSET
        else:
            result = self.result

        task: None | str | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        else:
            task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "arguments": arguments,
                "cached": cached,
                "id": id,
                "started_at": started_at,
                "status": status,
                "tool": tool,
            }
        )
        if agent is not UNSET:
            field_dict["agent"] = agent
        if approval is not UNSET:
            field_dict["approval"] = approval
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if result is not UNSET:
            field_dict["result"] = result
        if task is not UNSET:
            field_dict["task"] = task

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.tool_call_approval_type_0 import ToolCallApprovalType0
        from ..models.tool_call_arguments import ToolCallArguments

        d = dict(src_dict)
        arguments = ToolCallArguments.from_dict(d.pop("arguments"))

        cached = d.pop("cached")

        id = d.pop("id")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        status = d.pop("status")

        tool = d.pop("tool")

        def _parse_agent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent = _parse_agent(d.pop("agent", UNSET))

        def _parse_approval(data: object) -> None | ToolCallApprovalType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                approval_type_0 = ToolCallApprovalType0.from_dict(data)

                return approval_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ToolCallApprovalType0 | Unset, data)

        approval = _parse_approval(d.pop("approval", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_result(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        result = _parse_result(d.pop("result", UNSET))

        def _parse_task(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        task = _parse_task(d.pop("task", UNSET))

        tool_call = cls(
            arguments=arguments,
            cached=cached,
            id=id,
            started_at=started_at,
            status=status,
            tool=tool,
            agent=agent,
            approval=approval,
            error=error,
            finished_at=finished_at,
            result=result,
            task=task,
        )

        tool_call.additional_properties = d
        return tool_call

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
