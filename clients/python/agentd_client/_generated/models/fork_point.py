from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ForkPoint")


@_attrs_define
class ForkPoint:
    """A fork's task.

    Attributes:
        task (str): A task of the run's crew.
    """

    task: str

    def to_dict(self) -> dict[str, Any]:
        task = self.task

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "task": task,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        task = d.pop("task")

        fork_point = cls(
            task=task,
        )

        return fork_point
