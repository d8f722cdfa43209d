from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ResumeRequestType0")


@_attrs_define
class ResumeRequestType0:
    """
    Attributes:
        approve (bool): Accept the answer.
        feedback (None | str | Unset):
    """

    approve: bool
    feedback: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        approve = self.approve

        feedback: None | str | Unset
        if isinstance(self.feedback, Unset):
            feedback = UNSET
        else:
            feedback = self.feedback

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "approve": approve,
            }
        )
        if feedback is not UNSET:
            field_dict["feedback"] = feedback

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        approve = d.pop("approve")

        def _parse_feedback(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        feedback = _parse_feedback(d.pop("feedback", UNSET))

        resume_request_type_0 = cls(
            approve=approve,
            feedback=feedback,
        )

        return resume_request_type_0
