from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.import_format import ImportFormat
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.crew_import_mapping_type_0 import CrewImportMappingType0


T = TypeVar("T", bound="CrewImport")


@_attrs_define
class CrewImport:
    """A CrewAI project to store as a crew (`POST /v1/crews:import`).

    Attributes:
        agents_yaml (str): The text of the project's `config/agents.yaml`: agents by name, with CrewAI's fields
            (`role`, `goal`, `backstory`, `llm`, `tools`, `max_iter`, `max_rpm`, `allow_delegation`…).
        name (str): The stored crew's name (letters, digits, `-`, `_`, `.`; at most 100 characters).
        tasks_yaml (str): The text of the project's `config/tasks.yaml`: tasks by name, in the order they run, with
            CrewAI's fields (`description`, `expected_output`, `agent`, `context`, `tools`,
            `async_execution`, `human_input`, `guardrail`…).
        format_ (ImportFormat | Unset): The formats a crew can be imported from.
        mapping (CrewImportMappingType0 | None | Unset): What the project's `crew.py` says, which the YAML cannot: any
            crew-level field of a crew
            spec (`process`, `manager_llm`, `planning`, `planning_llm`, `memory`, `knowledge`,
            `tools`, `mcp_servers`, `requires_approval`, `max_rpm`, `inputs_schema`, `publish`…), and
            `tool_names` (a CrewAI tool's name → an agentd tool's name, or null to drop it), `models`
            (a CrewAI `llm` → an agentd model; `"*"` for every agent), `agents` and `tasks` (fields of
            an agent or a task of the crew spec, by name, set over what the YAML says).
    """

    agents_yaml: str
    name: str
    tasks_yaml: str
    format_: ImportFormat | Unset = UNSET
    mapping: CrewImportMappingType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.crew_import_mapping_type_0 import CrewImportMappingType0

        agents_yaml = self.agents_yaml

        name = self.name

        tasks_yaml = self.tasks_yaml

        format_: str | Unset = UNSET
        if not isinstance(self.format_, Unset):
            format_ = self.format_.value

        mapping: dict[str, Any] | None | Unset
        if isinstance(self.mapping, Unset):
            mapping = UNSET
        elif isinstance(self.mapping, CrewImportMappingType0):
            mapping = self.mapping.to_dict()
        else:
            mapping = self.mapping

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "agents_yaml": agents_yaml,
                "name": name,
                "tasks_yaml": tasks_yaml,
            }
        )
        if format_ is not UNSET:
            field_dict["format"] = format_
        if mapping is not UNSET:
            field_dict["mapping"] = mapping

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_import_mapping_type_0 import CrewImportMappingType0

        d = dict(src_dict)
        agents_yaml = d.pop("agents_yaml")

        name = d.pop("name")

        tasks_yaml = d.pop("tasks_yaml")

        _format_ = d.pop("format", UNSET)
        format_: ImportFormat | Unset
        if isinstance(_format_, Unset):
            format_ = UNSET
        else:
            format_ = ImportFormat(_format_)

        def _parse_mapping(data: object) -> CrewImportMappingType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                mapping_type_0 = CrewImportMappingType0.from_dict(data)

                return mapping_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CrewImportMappingType0 | None | Unset, data)

        mapping = _parse_mapping(d.pop("mapping", UNSET))

        crew_import = cls(
            agents_yaml=agents_yaml,
            name=name,
            tasks_yaml=tasks_yaml,
            format_=format_,
            mapping=mapping,
        )

        return crew_import
