from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.resume_entry import ResumeEntry
    from ..models.run_agent_input_context_type_0_item import (
        RunAgentInputContextType0Item,
    )
    from ..models.run_agent_input_forwarded_props_type_0 import (
        RunAgentInputForwardedPropsType0,
    )
    from ..models.run_agent_input_messages_item import RunAgentInputMessagesItem
    from ..models.run_agent_input_state_type_0 import RunAgentInputStateType0
    from ..models.run_agent_input_tools_type_0_item import RunAgentInputToolsType0Item


T = TypeVar("T", bound="RunAgentInput")


@_attrs_define
class RunAgentInput:
    """The input of an AG-UI run (`RunAgentInput`). Fields the server does not use are accepted.

    Attributes:
        run_id (str): The client's id of this run (echoed in the events; a repeated input follows the same run).
        thread_id (str): The conversation: an agentd thread (its id, or any text naming one of the tenant's
            AG-UI threads, created on first use).
        context (list[RunAgentInputContextType0Item] | None | Unset):
        forwarded_props (None | RunAgentInputForwardedPropsType0 | Unset): `{"inputs": {...}}`: the crew's inputs.
        messages (list[RunAgentInputMessagesItem] | Unset): The conversation's messages: the last user message is the
            input `message` when the crew
            uses one (the thread keeps the history).
        parent_run_id (None | str | Unset):
        protocol_version (None | str | Unset):
        resume (list[ResumeEntry] | None | Unset): Answers to the interrupts the thread's last run ended with.
        state (None | RunAgentInputStateType0 | Unset): Inputs of the crew (an object), when `forwardedProps.inputs`
            does not give them.
        tools (list[RunAgentInputToolsType0Item] | None | Unset):
    """

    run_id: str
    thread_id: str
    context: list[RunAgentInputContextType0Item] | None | Unset = UNSET
    forwarded_props: None | RunAgentInputForwardedPropsType0 | Unset = UNSET
    messages: list[RunAgentInputMessagesItem] | Unset = UNSET
    parent_run_id: None | str | Unset = UNSET
    protocol_version: None | str | Unset = UNSET
    resume: list[ResumeEntry] | None | Unset = UNSET
    state: None | RunAgentInputStateType0 | Unset = UNSET
    tools: list[RunAgentInputToolsType0Item] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_agent_input_forwarded_props_type_0 import (
            RunAgentInputForwardedPropsType0,
        )
        from ..models.run_agent_input_state_type_0 import RunAgentInputStateType0

        run_id = self.run_id

        thread_id = self.thread_id

        context: list[dict[str, Any]] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, list):
            context = []
            for context_type_0_item_data in self.context:
                context_type_0_item = context_type_0_item_data.to_dict()
                context.append(context_type_0_item)

        else:
            context = self.context

        forwarded_props: dict[str, Any] | None | Unset
        if isinstance(self.forwarded_props, Unset):
            forwarded_props = UNSET
        elif isinstance(self.forwarded_props, RunAgentInputForwardedPropsType0):
            forwarded_props = self.forwarded_props.to_dict()
        else:
            forwarded_props = self.forwarded_props

        messages: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.messages, Unset):
            messages = []
            for messages_item_data in self.messages:
                messages_item = messages_item_data.to_dict()
                messages.append(messages_item)

        parent_run_id: None | str | Unset
        if isinstance(self.parent_run_id, Unset):
            parent_run_id = UNSET
        else:
            parent_run_id = self.parent_run_id

        protocol_version: None | str | Unset
        if isinstance(self.protocol_version, Unset):
            protocol_version = UNSET
        else:
            protocol_version = self.protocol_version

        resume: list[dict[str, Any]] | None | Unset
        if isinstance(self.resume, Unset):
            resume = UNSET
        elif isinstance(self.resume, list):
            resume = []
            for resume_type_0_item_data in self.resume:
                resume_type_0_item = resume_type_0_item_data.to_dict()
                resume.append(resume_type_0_item)

        else:
            resume = self.resume

        state: dict[str, Any] | None | Unset
        if isinstance(self.state, Unset):
            state = UNSET
        elif isinstance(self.state, RunAgentInputStateType0):
            state = self.state.to_dict()
        else:
            state = self.state

        tools: list[dict[str, Any]] | None | Unset
        if isinstance(self.tools, Unset):
            tools = UNSET
        elif isinstance(self.tools, list):
            tools = []
            for tools_type_0_item_data in self.tools:
                tools_type_0_item = tools_type_0_item_data.to_dict()
                tools.append(tools_type_0_item)

        else:
            tools = self.tools

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "runId": run_id,
                "threadId": thread_id,
            }
        )
        if context is not UNSET:
            field_dict["context"] = context
        if forwarded_props is not UNSET:
            field_dict["forwardedProps"] = forwarded_props
        if messages is not UNSET:
            field_dict["messages"] = messages
        if parent_run_id is not UNSET:
            field_dict["parentRunId"] = parent_run_id
        if protocol_version is not UNSET:
            field_dict["protocolVersion"] = protocol_version
        if resume is not UNSET:
            field_dict["resume"] = resume
        if state is not UNSET:
            field_dict["state"] = state
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.resume_entry import ResumeEntry
        from ..models.run_agent_input_context_type_0_item import (
            RunAgentInputContextType0Item,
        )
        from ..models.run_agent_input_forwarded_props_type_0 import (
            RunAgentInputForwardedPropsType0,
        )
        from ..models.run_agent_input_messages_item import RunAgentInputMessagesItem
        from ..models.run_agent_input_state_type_0 import RunAgentInputStateType0
        from ..models.run_agent_input_tools_type_0_item import (
            RunAgentInputToolsType0Item,
        )

        d = dict(src_dict)
        run_id = d.pop("runId")

        thread_id = d.pop("threadId")

        def _parse_context(
            data: object,
        ) -> list[RunAgentInputContextType0Item] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                context_type_0 = []
                _context_type_0 = data
                for context_type_0_item_data in _context_type_0:
                    context_type_0_item = RunAgentInputContextType0Item.from_dict(
                        context_type_0_item_data
                    )

                    context_type_0.append(context_type_0_item)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RunAgentInputContextType0Item] | None | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_forwarded_props(
            data: object,
        ) -> None | RunAgentInputForwardedPropsType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                forwarded_props_type_0 = RunAgentInputForwardedPropsType0.from_dict(
                    data
                )

                return forwarded_props_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunAgentInputForwardedPropsType0 | Unset, data)

        forwarded_props = _parse_forwarded_props(d.pop("forwardedProps", UNSET))

        _messages = d.pop("messages", UNSET)
        messages: list[RunAgentInputMessagesItem] | Unset = UNSET
        if _messages is not UNSET:
            messages = []
            for messages_item_data in _messages:
                messages_item = RunAgentInputMessagesItem.from_dict(messages_item_data)

                messages.append(messages_item)

        def _parse_parent_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent_run_id = _parse_parent_run_id(d.pop("parentRunId", UNSET))

        def _parse_protocol_version(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        protocol_version = _parse_protocol_version(d.pop("protocolVersion", UNSET))

        def _parse_resume(data: object) -> list[ResumeEntry] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                resume_type_0 = []
                _resume_type_0 = data
                for resume_type_0_item_data in _resume_type_0:
                    resume_type_0_item = ResumeEntry.from_dict(resume_type_0_item_data)

                    resume_type_0.append(resume_type_0_item)

                return resume_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ResumeEntry] | None | Unset, data)

        resume = _parse_resume(d.pop("resume", UNSET))

        def _parse_state(data: object) -> None | RunAgentInputStateType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                state_type_0 = RunAgentInputStateType0.from_dict(data)

                return state_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunAgentInputStateType0 | Unset, data)

        state = _parse_state(d.pop("state", UNSET))

        def _parse_tools(
            data: object,
        ) -> list[RunAgentInputToolsType0Item] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tools_type_0 = []
                _tools_type_0 = data
                for tools_type_0_item_data in _tools_type_0:
                    tools_type_0_item = RunAgentInputToolsType0Item.from_dict(
                        tools_type_0_item_data
                    )

                    tools_type_0.append(tools_type_0_item)

                return tools_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RunAgentInputToolsType0Item] | None | Unset, data)

        tools = _parse_tools(d.pop("tools", UNSET))

        run_agent_input = cls(
            run_id=run_id,
            thread_id=thread_id,
            context=context,
            forwarded_props=forwarded_props,
            messages=messages,
            parent_run_id=parent_run_id,
            protocol_version=protocol_version,
            resume=resume,
            state=state,
            tools=tools,
        )

        run_agent_input.additional_properties = d
        return run_agent_input

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
