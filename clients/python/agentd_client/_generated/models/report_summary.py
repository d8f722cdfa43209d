from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReportSummary")


@_attrs_define
class ReportSummary:
    """An evaluation's totals.

    Attributes:
        cases (int):
        cost_usd (float):
        divergences (int): Tool calls that diverged from the recorded runs, in all cases.
        duration_ms (int): The sum of the ended cases' durations.
        ended (int): Cases whose run has ended.
        pass_rate (float): `passed / ended` (0 before any case ended).
        passed (int):
        reference_cost_usd (float):
        reference_duration_ms (int):
        reference_tokens (int): The same figures of the reference runs (cases made from runs).
        replayed_calls (int):
        tokens (int):
    """

    cases: int
    cost_usd: float
    divergences: int
    duration_ms: int
    ended: int
    pass_rate: float
    passed: int
    reference_cost_usd: float
    reference_duration_ms: int
    reference_tokens: int
    replayed_calls: int
    tokens: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cases = self.cases

        cost_usd = self.cost_usd

        divergences = self.divergences

        duration_ms = self.duration_ms

        ended = self.ended

        pass_rate = self.pass_rate

        passed = self.passed

        reference_cost_usd = self.reference_cost_usd

        reference_duration_ms = self.reference_duration_ms

        reference_tokens = self.reference_tokens

        replayed_calls = self.replayed_calls

        tokens = self.tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cases": cases,
                "cost_usd": cost_usd,
                "divergences": divergences,
                "duration_ms": duration_ms,
                "ended": ended,
                "pass_rate": pass_rate,
                "passed": passed,
                "reference_cost_usd": reference_cost_usd,
                "reference_duration_ms": reference_duration_ms,
                "reference_tokens": reference_tokens,
                "replayed_calls": replayed_calls,
                "tokens": tokens,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cases = d.pop("cases")

        cost_usd = d.pop("cost_usd")

        divergences = d.pop("divergences")

        duration_ms = d.pop("duration_ms")

        ended = d.pop("ended")

        pass_rate = d.pop("pass_rate")

        passed = d.pop("passed")

        reference_cost_usd = d.pop("reference_cost_usd")

        reference_duration_ms = d.pop("reference_duration_ms")

        reference_tokens = d.pop("reference_tokens")

        replayed_calls = d.pop("replayed_calls")

        tokens = d.pop("tokens")

        report_summary = cls(
            cases=cases,
            cost_usd=cost_usd,
            divergences=divergences,
            duration_ms=duration_ms,
            ended=ended,
            pass_rate=pass_rate,
            passed=passed,
            reference_cost_usd=reference_cost_usd,
            reference_duration_ms=reference_duration_ms,
            reference_tokens=reference_tokens,
            replayed_calls=replayed_calls,
            tokens=tokens,
        )

        report_summary.additional_properties = d
        return report_summary

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
