from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EvaluationJudged")


@_attrs_define
class EvaluationJudged:
    """The judge's verdict on an evaluation case's output.

    Attributes:
        model (str): The judge's model (`provider/model`).
        passed (bool): Whether the output meets the rubric.
        reason (str): Why (the judge's words, or why it could not judge).
        score (float | None | Unset): The judge's score from 0 to 1, when it gave one.
    """

    model: str
    passed: bool
    reason: str
    score: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        model = self.model

        passed = self.passed

        reason = self.reason

        score: float | None | Unset
        if isinstance(self.score, Unset):
            score = UNSET
        else:
            score = self.score

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "model": model,
                "passed": passed,
                "reason": reason,
            }
        )
        if score is not UNSET:
            field_dict["score"] = score

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        model = d.pop("model")

        passed = d.pop("passed")

        reason = d.pop("reason")

        def _parse_score(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        score = _parse_score(d.pop("score", UNSET))

        evaluation_judged = cls(
            model=model,
            passed=passed,
            reason=reason,
            score=score,
        )

        evaluation_judged.additional_properties = d
        return evaluation_judged

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
