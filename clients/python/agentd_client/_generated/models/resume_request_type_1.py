from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ResumeRequestType1")


@_attrs_define
class ResumeRequestType1:
    """
    Attributes:
        approve (bool): Have the agent redo the task with the feedback.
        feedback (str): What to change.
    """

    approve: bool
    feedback: str

    def to_dict(self) -> dict[str, Any]:
        approve = self.approve

        feedback = self.feedback

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "approve": approve,
                "feedback": feedback,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        approve = d.pop("approve")

        feedback = d.pop("feedback")

        resume_request_type_1 = cls(
            approve=approve,
            feedback=feedback,
        )

        return resume_request_type_1
