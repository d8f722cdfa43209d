from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.fork_changes_agents import ForkChangesAgents
    from ..models.fork_changes_inputs import ForkChangesInputs
    from ..models.fork_changes_tasks import ForkChangesTasks


T = TypeVar("T", bound="ForkChanges")


@_attrs_define
class ForkChanges:
    """What a fork changes: inputs (merged over the run's), and fields of agents and tasks by name
    (merged over the crew's; a task's only at or after the fork's task).

        Attributes:
            agents (ForkChangesAgents | Unset): By agent name: fields of an agent spec to set (`llm`, `goal`, `backstory`,
                `role`,
                `tools`...; not `name`).
            inputs (ForkChangesInputs | Unset): Inputs to set (the others keep the run's values).
            tasks (ForkChangesTasks | Unset): By task name: fields of a task spec to set (`description`,
                `expected_output`...; not
                `name`).
    """

    agents: ForkChangesAgents | Unset = UNSET
    inputs: ForkChangesInputs | Unset = UNSET
    tasks: ForkChangesTasks | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        agents: dict[str, Any] | Unset = UNSET
        if not isinstance(self.agents, Unset):
            agents = self.agents.to_dict()

        inputs: dict[str, Any] | Unset = UNSET
        if not isinstance(self.inputs, Unset):
            inputs = self.inputs.to_dict()

        tasks: dict[str, Any] | Unset = UNSET
        if not isinstance(self.tasks, Unset):
            tasks = self.tasks.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if agents is not UNSET:
            field_dict["agents"] = agents
        if inputs is not UNSET:
            field_dict["inputs"] = inputs
        if tasks is not UNSET:
            field_dict["tasks"] = tasks

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fork_changes_agents import ForkChangesAgents
        from ..models.fork_changes_inputs import ForkChangesInputs
        from ..models.fork_changes_tasks import ForkChangesTasks

        d = dict(src_dict)
        _agents = d.pop("agents", UNSET)
        agents: ForkChangesAgents | Unset
        if isinstance(_agents, Unset):
            agents = UNSET
        else:
            agents = ForkChangesAgents.from_dict(_agents)

        _inputs = d.pop("inputs", UNSET)
        inputs: ForkChangesInputs | Unset
        if isinstance(_inputs, Unset):
            inputs = UNSET
        else:
            inputs = ForkChangesInputs.from_dict(_inputs)

        _tasks = d.pop("tasks", UNSET)
        tasks: ForkChangesTasks | Unset
        if isinstance(_tasks, Unset):
            tasks = UNSET
        else:
            tasks = ForkChangesTasks.from_dict(_tasks)

        fork_changes = cls(
            agents=agents,
            inputs=inputs,
            tasks=tasks,
        )

        return fork_changes
