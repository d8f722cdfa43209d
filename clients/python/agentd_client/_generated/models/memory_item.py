from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.memory_kind import MemoryKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="MemoryItem")


@_attrs_define
class MemoryItem:
    """An item as recalled or listed: its `score` is the relevance to the query (0 when listed
    without one, or recalled for being recent).

        Attributes:
            created_at (datetime.datetime):
            id (UUID):
            kind (MemoryKind): What an item is.
            scope (str):
            score (float):
            text (str):
            agent (None | str | Unset):
            run_id (None | Unset | UUID):
            task (None | str | Unset):
    """

    created_at: datetime.datetime
    id: UUID
    kind: MemoryKind
    scope: str
    score: float
    text: str
    agent: None | str | Unset = UNSET
    run_id: None | Unset | UUID = UNSET
    task: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = str(self.id)

        kind = self.kind.value

        scope = self.scope

        score = self.score

        text = self.text

        agent: None | str | Unset
        if isinstance(self.agent, Unset):
            agent = UNSET
        else:
            agent = self.agent

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        elif isinstance(self.run_id, UUID):
            run_id = str(self.run_id)
        else:
            run_id = self.run_id

        task: None | str | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        else:
            task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "kind": kind,
                "scope": scope,
                "score": score,
                "text": text,
            }
        )
        if agent is not UNSET:
            field_dict["agent"] = agent
        if run_id is not UNSET:
            field_dict["run_id"] = run_id
        if task is not UNSET:
            field_dict["task"] = task

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        kind = MemoryKind(d.pop("kind"))

        scope = d.pop("scope")

        score = d.pop("score")

        text = d.pop("text")

        def _parse_agent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent = _parse_agent(d.pop("agent", UNSET))

        def _parse_run_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                run_id_type_0 = UUID(data)

                return run_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        run_id = _parse_run_id(d.pop("run_id", UNSET))

        def _parse_task(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        task = _parse_task(d.pop("task", UNSET))

        memory_item = cls(
            created_at=created_at,
            id=id,
            kind=kind,
            scope=scope,
            score=score,
            text=text,
            agent=agent,
            run_id=run_id,
            task=task,
        )

        memory_item.additional_properties = d
        return memory_item

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
