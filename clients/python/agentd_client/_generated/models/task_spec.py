from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.task_spec_output_schema_type_0 import TaskSpecOutputSchemaType0


T = TypeVar("T", bound="TaskSpec")


@_attrs_define
class TaskSpec:
    """A task: what to do, what to deliver, and who does it.

    Attributes:
        description (str):
        expected_output (str):
        name (str):
        agent (None | str | Unset): The agent's name; optional only in the hierarchical process.
        async_execution (bool | Unset): Start the task and move on; the next task without it waits for it.
        context (list[str] | None | Unset): Names of earlier tasks whose outputs this task sees; absent means all
            earlier outputs.
        guardrail (None | str | Unset): A sentence the answer must satisfy, checked by the model (JSON shape:
            `output_schema`).
        guardrail_max_retries (int | None | Unset): Redos a failed guardrail allows (default 3).
        human_input (bool | Unset):
        max_step_iterations (int | None | Unset): With planning: the bound of each step's loop (default 15).
        output_schema (None | TaskSpecOutputSchemaType0 | Unset): A JSON schema the final answer must satisfy (2020-12
            unless `$schema` says otherwise;
            `$ref`s resolve inside it only).
        step_timeout_s (int | None | Unset): With planning: seconds a step may take; past it the step returns what it
            has.
        tools (list[str] | None | Unset): Tools for this task, replacing the agent's.
    """

    description: str
    expected_output: str
    name: str
    agent: None | str | Unset = UNSET
    async_execution: bool | Unset = UNSET
    context: list[str] | None | Unset = UNSET
    guardrail: None | str | Unset = UNSET
    guardrail_max_retries: int | None | Unset = UNSET
    human_input: bool | Unset = UNSET
    max_step_iterations: int | None | Unset = UNSET
    output_schema: None | TaskSpecOutputSchemaType0 | Unset = UNSET
    step_timeout_s: int | None | Unset = UNSET
    tools: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_spec_output_schema_type_0 import TaskSpecOutputSchemaType0

        description = self.description

        expected_output = self.expected_output

        name = self.name

        agent: None | str | Unset
        if isinstance(self.agent, Unset):
            agent = UNSET
        else:
            agent = self.agent

        async_execution = self.async_execution

        context: list[str] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, list):
            context = self.context

        else:
            context = self.context

        guardrail: None | str | Unset
        if isinstance(self.guardrail, Unset):
            guardrail = UNSET
        else:
            guardrail = self.guardrail

        guardrail_max_retries: int | None | Unset
        if isinstance(self.guardrail_max_retries, Unset):
            guardrail_max_retries = UNSET
        else:
            guardrail_max_retries = self.guardrail_max_retries

        human_input = self.human_input

        max_step_iterations: int | None | Unset
        if isinstance(self.max_step_iterations, Unset):
            max_step_iterations = UNSET
        else:
            max_step_iterations = self.max_step_iterations

        output_schema: dict[str, Any] | None | Unset
        if isinstance(self.output_schema, Unset):
            output_schema = UNSET
        elif isinstance(self.output_schema, TaskSpecOutputSchemaType0):
            output_schema = self.output_schema.to_dict()
        else:
            output_schema = self.output_schema

        step_timeout_s: int | None | Unset
        if isinstance(self.step_timeout_s, Unset):
            step_timeout_s = UNSET
        else:
            step_timeout_s = self.step_timeout_s

        tools: list[str] | None | Unset
        if isinstance(self.tools, Unset):
            tools = UNSET
        elif isinstance(self.tools, list):
            tools = self.tools

        else:
            tools = self.tools

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "description": description,
                "expected_output": expected_output,
                "name": name,
            }
        )
        if agent is not UNSET:
            field_dict["agent"] = agent
        if async_execution is not UNSET:
            field_dict["async_execution"] = async_execution
        if context is not UNSET:
            field_dict["context"] = context
        if guardrail is not UNSET:
            field_dict["guardrail"] = guardrail
        if guardrail_max_retries is not UNSET:
            field_dict["guardrail_max_retries"] = guardrail_max_retries
        if human_input is not UNSET:
            field_dict["human_input"] = human_input
        if max_step_iterations is not UNSET:
            field_dict["max_step_iterations"] = max_step_iterations
        if output_schema is not UNSET:
            field_dict["output_schema"] = output_schema
        if step_timeout_s is not UNSET:
            field_dict["step_timeout_s"] = step_timeout_s
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_spec_output_schema_type_0 import TaskSpecOutputSchemaType0

        d = dict(src_dict)
        description = d.pop("description")

        expected_output = d.pop("expected_output")

        name = d.pop("name")

        def _parse_agent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent = _parse_agent(d.pop("agent", UNSET))

        async_execution = d.pop("async_execution", UNSET)

        def _parse_context(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                context_type_0 = cast(list[str], data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_guardrail(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        guardrail = _parse_guardrail(d.pop("guardrail", UNSET))

        def _parse_guardrail_max_retries(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        guardrail_max_retries = _parse_guardrail_max_retries(
            d.pop("guardrail_max_retries", UNSET)
        )

        human_input = d.pop("human_input", UNSET)

        def _parse_max_step_iterations(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_step_iterations = _parse_max_step_iterations(
            d.pop("max_step_iterations", UNSET)
        )

        def _parse_output_schema(
            data: object,
        ) -> None | TaskSpecOutputSchemaType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_schema_type_0 = TaskSpecOutputSchemaType0.from_dict(data)

                return output_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskSpecOutputSchemaType0 | Unset, data)

        output_schema = _parse_output_schema(d.pop("output_schema", UNSET))

        def _parse_step_timeout_s(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        step_timeout_s = _parse_step_timeout_s(d.pop("step_timeout_s", UNSET))

        def _parse_tools(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tools_type_0 = cast(list[str], data)

                return tools_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        tools = _parse_tools(d.pop("tools", UNSET))

        task_spec = cls(
            description=description,
            expected_output=expected_output,
            name=name,
            agent=agent,
            async_execution=async_execution,
            context=context,
            guardrail=guardrail,
            guardrail_max_retries=guardrail_max_retries,
            human_input=human_input,
            max_step_iterations=max_step_iterations,
            output_schema=output_schema,
            step_timeout_s=step_timeout_s,
            tools=tools,
        )

        return task_spec
