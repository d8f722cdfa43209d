from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.thread_status import ThreadStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.thread_metadata import ThreadMetadata
    from ..models.thread_run import ThreadRun


T = TypeVar("T", bound="Thread")


@_attrs_define
class Thread:
    """A thread.

    Attributes:
        created_at (datetime.datetime):
        id (UUID):
        metadata (ThreadMetadata): Free-form data kept with the thread (`GET /v1/threads?metadata=` finds threads by
            it).
        status (ThreadStatus): Whether a thread has a run that has not ended.
        updated_at (datetime.datetime): When a run last joined the thread (or it was created).
        runs (list[ThreadRun] | None | Unset): Its runs, oldest first: the newest 100 (`GET /v1/threads/{id}` only;
            absent in lists).
    """

    created_at: datetime.datetime
    id: UUID
    metadata: ThreadMetadata
    status: ThreadStatus
    updated_at: datetime.datetime
    runs: list[ThreadRun] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = str(self.id)

        metadata = self.metadata.to_dict()

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        runs: list[dict[str, Any]] | None | Unset
        if isinstance(self.runs, Unset):
            runs = UNSET
        elif isinstance(self.runs, list):
            runs = []
            for runs_type_0_item_data in self.runs:
                runs_type_0_item = runs_type_0_item_data.to_dict()
                runs.append(runs_type_0_item)

        else:
            runs = self.runs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "metadata": metadata,
                "status": status,
                "updated_at": updated_at,
            }
        )
        if runs is not UNSET:
            field_dict["runs"] = runs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.thread_metadata import ThreadMetadata
        from ..models.thread_run import ThreadRun

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        metadata = ThreadMetadata.from_dict(d.pop("metadata"))

        status = ThreadStatus(d.pop("status"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_runs(data: object) -> list[ThreadRun] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                runs_type_0 = []
                _runs_type_0 = data
                for runs_type_0_item_data in _runs_type_0:
                    runs_type_0_item = ThreadRun.from_dict(runs_type_0_item_data)

                    runs_type_0.append(runs_type_0_item)

                return runs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[ThreadRun] | None | Unset, data)

        runs = _parse_runs(d.pop("runs", UNSET))

        thread = cls(
            created_at=created_at,
            id=id,
            metadata=metadata,
            status=status,
            updated_at=updated_at,
            runs=runs,
        )

        thread.additional_properties = d
        return thread

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
