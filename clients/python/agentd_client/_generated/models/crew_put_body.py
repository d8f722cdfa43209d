from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.process import Process
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_spec import AgentSpec
    from ..models.crew_put_body_inputs_schema_type_0 import CrewPutBodyInputsSchemaType0
    from ..models.knowledge_use import KnowledgeUse
    from ..models.llm_options import LlmOptions
    from ..models.mcp_server_spec import McpServerSpec
    from ..models.memory_spec import MemorySpec
    from ..models.publish import Publish
    from ..models.task_spec import TaskSpec
    from ..models.tool_spec import ToolSpec


T = TypeVar("T", bound="CrewPutBody")


@_attrs_define
class CrewPutBody:
    """A crew spec whose name is the path's (a `name` equal to it may be given too).

    Attributes:
        agents (list[AgentSpec]): At least one (at most the server's `max_agents`, default 50).
        tasks (list[TaskSpec]): At least one (at most the server's `max_tasks`, default 100).
        description (None | str | Unset): What the crew does, in a sentence or two (at most 2,000 characters): the
            description the
            protocols publish it with (the MCP tool's, the A2A agent card's). Absent: one made from
            its tasks.
        inputs_schema (CrewPutBodyInputsSchemaType0 | None | Unset): A JSON Schema of the kickoff's `inputs` (an object
            schema declaring every `{placeholder}`
            as a required property). Kickoffs are checked against it, and the protocols publish it
            (the MCP tool's `inputSchema`). Absent: each placeholder is a required string.
        knowledge (list[KnowledgeUse | str] | Unset): Knowledge bases of the tenant (`POST /v1/knowledge`) whose hits
            every task's prompt
            receives: the prompt is the query, the hits are appended as "Relevant Knowledge". By name
            or `{"name", "k", "min_score"}` (at most 20).
        manager_llm (LlmOptions | None | str | Unset):
        max_cost_usd (float | None | Unset): The run's cost budget in US dollars, at the prices configured for its
            models (calls to
            unpriced models cost nothing here). Over it, the run stops with `error.kind = "budget"`.
        max_rpm (int | None | Unset): Crew-wide requests-per-minute limit; overrides the agents' `max_rpm`.
        max_tokens (int | None | Unset): The run's token budget: prompt and completion tokens of all its model calls
            together. A
            run that would go over it (on an estimate before a call, or on the usage reported after
            it) stops with `error.kind = "budget"`.
        mcp_servers (list[McpServerSpec] | Unset): MCP servers (Streamable HTTP) whose tools agents and tasks name as
            `<server>__<tool>`, or
            all of a server's as `<server>__*` (at most 20 servers).
        memory (MemorySpec | None | Unset):
        planning (bool | Unset): Plan each task into steps before performing it (sequential process).
        planning_llm (LlmOptions | None | str | Unset):
        process (Process | Unset): How tasks are executed.
        publish (Publish | Unset): Which protocols publish a registered crew.
        requires_approval (list[str] | Unset): Built-in tools whose calls wait for a person's approval (crew tools and
            MCP tools say so
            themselves).
        stream (bool | Unset): Stream the agents' replies: each turn's text is published as `llm.delta` events to the
            run's SSE streams as it arrives (live only, never journaled; the whole reply is journaled
            as always).
        tools (list[ToolSpec] | Unset): Tools declared by the crew (HTTP tools), usable beside the built-ins.
    """

    agents: list[AgentSpec]
    tasks: list[TaskSpec]
    description: None | str | Unset = UNSET
    inputs_schema: CrewPutBodyInputsSchemaType0 | None | Unset = UNSET
    knowledge: list[KnowledgeUse | str] | Unset = UNSET
    manager_llm: LlmOptions | None | str | Unset = UNSET
    max_cost_usd: float | None | Unset = UNSET
    max_rpm: int | None | Unset = UNSET
    max_tokens: int | None | Unset = UNSET
    mcp_servers: list[McpServerSpec] | Unset = UNSET
    memory: MemorySpec | None | Unset = UNSET
    planning: bool | Unset = UNSET
    planning_llm: LlmOptions | None | str | Unset = UNSET
    process: Process | Unset = UNSET
    publish: Publish | Unset = UNSET
    requires_approval: list[str] | Unset = UNSET
    stream: bool | Unset = UNSET
    tools: list[ToolSpec] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.crew_put_body_inputs_schema_type_0 import (
            CrewPutBodyInputsSchemaType0,
        )
        from ..models.knowledge_use import KnowledgeUse
        from ..models.llm_options import LlmOptions
        from ..models.memory_spec import MemorySpec

        agents = []
        for agents_item_data in self.agents:
            agents_item = agents_item_data.to_dict()
            agents.append(agents_item)

        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        inputs_schema: dict[str, Any] | None | Unset
        if isinstance(self.inputs_schema, Unset):
            inputs_schema = UNSET
        elif isinstance(self.inputs_schema, CrewPutBodyInputsSchemaType0):
            inputs_schema = self.inputs_schema.to_dict()
        else:
            inputs_schema = self.inputs_schema

        knowledge: list[dict[str, Any] | str] | Unset = UNSET
        if not isinstance(self.knowledge, Unset):
            knowledge = []
            for knowledge_item_data in self.knowledge:
                knowledge_item: dict[str, Any] | str
                if isinstance(knowledge_item_data, KnowledgeUse):
                    knowledge_item = knowledge_item_data.to_dict()
                else:
                    knowledge_item = knowledge_item_data
                knowledge.append(knowledge_item)

        manager_llm: dict[str, Any] | None | str | Unset
        if isinstance(self.manager_llm, Unset):
            manager_llm = UNSET
        elif isinstance(self.manager_llm, LlmOptions):
            manager_llm = self.manager_llm.to_dict()
        else:
            manager_llm = self.manager_llm

        max_cost_usd: float | None | Unset
        if isinstance(self.max_cost_usd, Unset):
            max_cost_usd = UNSET
        else:
            max_cost_usd = self.max_cost_usd

        max_rpm: int | None | Unset
        if isinstance(self.max_rpm, Unset):
            max_rpm = UNSET
        else:
            max_rpm = self.max_rpm

        max_tokens: int | None | Unset
        if isinstance(self.max_tokens, Unset):
            max_tokens = UNSET
        else:
            max_tokens = self.max_tokens

        mcp_servers: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.mcp_servers, Unset):
            mcp_servers = []
            for mcp_servers_item_data in self.mcp_servers:
                mcp_servers_item = mcp_servers_item_data.to_dict()
                mcp_servers.append(mcp_servers_item)

        memory: dict[str, Any] | None | Unset
        if isinstance(self.memory, Unset):
            memory = UNSET
        elif isinstance(self.memory, MemorySpec):
            memory = self.memory.to_dict()
        else:
            memory = self.memory

        planning = self.planning

        planning_llm: dict[str, Any] | None | str | Unset
        if isinstance(self.planning_llm, Unset):
            planning_llm = UNSET
        elif isinstance(self.planning_llm, LlmOptions):
            planning_llm = self.planning_llm.to_dict()
        else:
            planning_llm = self.planning_llm

        process: str | Unset = UNSET
        if not isinstance(self.process, Unset):
            process = self.process.value

        publish: dict[str, Any] | Unset = UNSET
        if not isinstance(self.publish, Unset):
            publish = self.publish.to_dict()

        requires_approval: list[str] | Unset = UNSET
        if not isinstance(self.requires_approval, Unset):
            requires_approval = self.requires_approval

        stream = self.stream

        tools: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.tools, Unset):
            tools = []
            for tools_item_data in self.tools:
                tools_item = tools_item_data.to_dict()
                tools.append(tools_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "agents": agents,
                "tasks": tasks,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if inputs_schema is not UNSET:
            field_dict["inputs_schema"] = inputs_schema
        if knowledge is not UNSET:
            field_dict["knowledge"] = knowledge
        if manager_llm is not UNSET:
            field_dict["manager_llm"] = manager_llm
        if max_cost_usd is not UNSET:
            field_dict["max_cost_usd"] = max_cost_usd
        if max_rpm is not UNSET:
            field_dict["max_rpm"] = max_rpm
        if max_tokens is not UNSET:
            field_dict["max_tokens"] = max_tokens
        if mcp_servers is not UNSET:
            field_dict["mcp_servers"] = mcp_servers
        if memory is not UNSET:
            field_dict["memory"] = memory
        if planning is not UNSET:
            field_dict["planning"] = planning
        if planning_llm is not UNSET:
            field_dict["planning_llm"] = planning_llm
        if process is not UNSET:
            field_dict["process"] = process
        if publish is not UNSET:
            field_dict["publish"] = publish
        if requires_approval is not UNSET:
            field_dict["requires_approval"] = requires_approval
        if stream is not UNSET:
            field_dict["stream"] = stream
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.agent_spec import AgentSpec
        from ..models.crew_put_body_inputs_schema_type_0 import (
            CrewPutBodyInputsSchemaType0,
        )
        from ..models.knowledge_use import KnowledgeUse
        from ..models.llm_options import LlmOptions
        from ..models.mcp_server_spec import McpServerSpec
        from ..models.memory_spec import MemorySpec
        from ..models.publish import Publish
        from ..models.task_spec import TaskSpec
        from ..models.tool_spec import ToolSpec

        d = dict(src_dict)
        agents = []
        _agents = d.pop("agents")
        for agents_item_data in _agents:
            agents_item = AgentSpec.from_dict(agents_item_data)

            agents.append(agents_item)

        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = TaskSpec.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_inputs_schema(
            data: object,
        ) -> CrewPutBodyInputsSchemaType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                inputs_schema_type_0 = CrewPutBodyInputsSchemaType0.from_dict(data)

                return inputs_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CrewPutBodyInputsSchemaType0 | None | Unset, data)

        inputs_schema = _parse_inputs_schema(d.pop("inputs_schema", UNSET))

        _knowledge = d.pop("knowledge", UNSET)
        knowledge: list[KnowledgeUse | str] | Unset = UNSET
        if _knowledge is not UNSET:
            knowledge = []
            for knowledge_item_data in _knowledge:

                def _parse_knowledge_item(data: object) -> KnowledgeUse | str:
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_knowledge_ref_type_1 = KnowledgeUse.from_dict(
                            data
                        )

                        return componentsschemas_knowledge_ref_type_1
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    return cast(KnowledgeUse | str, data)

                knowledge_item = _parse_knowledge_item(knowledge_item_data)

                knowledge.append(knowledge_item)

        def _parse_manager_llm(data: object) -> LlmOptions | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_llm_spec_type_1 = LlmOptions.from_dict(data)

                return componentsschemas_llm_spec_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LlmOptions | None | str | Unset, data)

        manager_llm = _parse_manager_llm(d.pop("manager_llm", UNSET))

        def _parse_max_cost_usd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost_usd = _parse_max_cost_usd(d.pop("max_cost_usd", UNSET))

        def _parse_max_rpm(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_rpm = _parse_max_rpm(d.pop("max_rpm", UNSET))

        def _parse_max_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens = _parse_max_tokens(d.pop("max_tokens", UNSET))

        _mcp_servers = d.pop("mcp_servers", UNSET)
        mcp_servers: list[McpServerSpec] | Unset = UNSET
        if _mcp_servers is not UNSET:
            mcp_servers = []
            for mcp_servers_item_data in _mcp_servers:
                mcp_servers_item = McpServerSpec.from_dict(mcp_servers_item_data)

                mcp_servers.append(mcp_servers_item)

        def _parse_memory(data: object) -> MemorySpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                memory_type_1 = MemorySpec.from_dict(data)

                return memory_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MemorySpec | None | Unset, data)

        memory = _parse_memory(d.pop("memory", UNSET))

        planning = d.pop("planning", UNSET)

        def _parse_planning_llm(data: object) -> LlmOptions | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_llm_spec_type_1 = LlmOptions.from_dict(data)

                return componentsschemas_llm_spec_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LlmOptions | None | str | Unset, data)

        planning_llm = _parse_planning_llm(d.pop("planning_llm", UNSET))

        _process = d.pop("process", UNSET)
        process: Process | Unset
        if isinstance(_process, Unset):
            process = UNSET
        else:
            process = Process(_process)

        _publish = d.pop("publish", UNSET)
        publish: Publish | Unset
        if isinstance(_publish, Unset):
            publish = UNSET
        else:
            publish = Publish.from_dict(_publish)

        requires_approval = cast(list[str], d.pop("requires_approval", UNSET))

        stream = d.pop("stream", UNSET)

        _tools = d.pop("tools", UNSET)
        tools: list[ToolSpec] | Unset = UNSET
        if _tools is not UNSET:
            tools = []
            for tools_item_data in _tools:
                tools_item = ToolSpec.from_dict(tools_item_data)

                tools.append(tools_item)

        crew_put_body = cls(
            agents=agents,
            tasks=tasks,
            description=description,
            inputs_schema=inputs_schema,
            knowledge=knowledge,
            manager_llm=manager_llm,
            max_cost_usd=max_cost_usd,
            max_rpm=max_rpm,
            max_tokens=max_tokens,
            mcp_servers=mcp_servers,
            memory=memory,
            planning=planning,
            planning_llm=planning_llm,
            process=process,
            publish=publish,
            requires_approval=requires_approval,
            stream=stream,
            tools=tools,
        )

        return crew_put_body
