from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.tool_calling import ToolCalling
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.knowledge_use import KnowledgeUse
    from ..models.llm_options import LlmOptions


T = TypeVar("T", bound="AgentSpec")


@_attrs_define
class AgentSpec:
    """An agent: a role with a goal, a backstory, a model and tools.

    Attributes:
        backstory (str):
        goal (str):
        name (str):
        role (str):
        allow_delegation (bool | Unset):
        knowledge (list[KnowledgeUse | str] | Unset): Knowledge bases whose hits this agent's task prompts receive
            (besides the crew's), by
            name or `{"name", "k", "min_score"}`.
        llm (LlmOptions | None | str | Unset):
        max_iter (int | Unset): Model calls the agent may make for one task before it must answer (1 to 1,000).
        max_rpm (int | None | Unset):
        tool_calling (ToolCalling | Unset): How an agent asks for tools.
        tools (list[str] | Unset):
    """

    backstory: str
    goal: str
    name: str
    role: str
    allow_delegation: bool | Unset = UNSET
    knowledge: list[KnowledgeUse | str] | Unset = UNSET
    llm: LlmOptions | None | str | Unset = UNSET
    max_iter: int | Unset = UNSET
    max_rpm: int | None | Unset = UNSET
    tool_calling: ToolCalling | Unset = UNSET
    tools: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.knowledge_use import KnowledgeUse
        from ..models.llm_options import LlmOptions

        backstory = self.backstory

        goal = self.goal

        name = self.name

        role = self.role

        allow_delegation = self.allow_delegation

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

        llm: dict[str, Any] | None | str | Unset
        if isinstance(self.llm, Unset):
            llm = UNSET
        elif isinstance(self.llm, LlmOptions):
            llm = self.llm.to_dict()
        else:
            llm = self.llm

        max_iter = self.max_iter

        max_rpm: int | None | Unset
        if isinstance(self.max_rpm, Unset):
            max_rpm = UNSET
        else:
            max_rpm = self.max_rpm

        tool_calling: str | Unset = UNSET
        if not isinstance(self.tool_calling, Unset):
            tool_calling = self.tool_calling.value

        tools: list[str] | Unset = UNSET
        if not isinstance(self.tools, Unset):
            tools = self.tools

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "backstory": backstory,
                "goal": goal,
                "name": name,
                "role": role,
            }
        )
        if allow_delegation is not UNSET:
            field_dict["allow_delegation"] = allow_delegation
        if knowledge is not UNSET:
            field_dict["knowledge"] = knowledge
        if llm is not UNSET:
            field_dict["llm"] = llm
        if max_iter is not UNSET:
            field_dict["max_iter"] = max_iter
        if max_rpm is not UNSET:
            field_dict["max_rpm"] = max_rpm
        if tool_calling is not UNSET:
            field_dict["tool_calling"] = tool_calling
        if tools is not UNSET:
            field_dict["tools"] = tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.knowledge_use import KnowledgeUse
        from ..models.llm_options import LlmOptions

        d = dict(src_dict)
        backstory = d.pop("backstory")

        goal = d.pop("goal")

        name = d.pop("name")

        role = d.pop("role")

        allow_delegation = d.pop("allow_delegation", UNSET)

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

        def _parse_llm(data: object) -> LlmOptions | None | str | Unset:
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

        llm = _parse_llm(d.pop("llm", UNSET))

        max_iter = d.pop("max_iter", UNSET)

        def _parse_max_rpm(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_rpm = _parse_max_rpm(d.pop("max_rpm", UNSET))

        _tool_calling = d.pop("tool_calling", UNSET)
        tool_calling: ToolCalling | Unset
        if isinstance(_tool_calling, Unset):
            tool_calling = UNSET
        else:
            tool_calling = ToolCalling(_tool_calling)

        tools = cast(list[str], d.pop("tools", UNSET))

        agent_spec = cls(
            backstory=backstory,
            goal=goal,
            name=name,
            role=role,
            allow_delegation=allow_delegation,
            knowledge=knowledge,
            llm=llm,
            max_iter=max_iter,
            max_rpm=max_rpm,
            tool_calling=tool_calling,
            tools=tools,
        )

        return agent_spec
