from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.fork_changes import ForkChanges
    from ..models.fork_point import ForkPoint


T = TypeVar("T", bound="ForkRequest")


@_attrs_define
class ForkRequest:
    """The body of `POST /v1/runs/{id}/fork`.

    Attributes:
        at (ForkPoint): A fork's task.
        changes (ForkChanges | Unset): What a fork changes: inputs (merged over the run's), and fields of agents and
            tasks by name
            (merged over the crew's; a task's only at or after the fork's task).
    """

    at: ForkPoint
    changes: ForkChanges | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        at = self.at.to_dict()

        changes: dict[str, Any] | Unset = UNSET
        if not isinstance(self.changes, Unset):
            changes = self.changes.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "at": at,
            }
        )
        if changes is not UNSET:
            field_dict["changes"] = changes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fork_changes import ForkChanges
        from ..models.fork_point import ForkPoint

        d = dict(src_dict)
        at = ForkPoint.from_dict(d.pop("at"))

        _changes = d.pop("changes", UNSET)
        changes: ForkChanges | Unset
        if isinstance(_changes, Unset):
            changes = UNSET
        else:
            changes = ForkChanges.from_dict(_changes)

        fork_request = cls(
            at=at,
            changes=changes,
        )

        return fork_request
