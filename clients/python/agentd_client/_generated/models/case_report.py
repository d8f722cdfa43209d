from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.case_report_inputs import CaseReportInputs
    from ..models.check import Check
    from ..models.divergence import Divergence
    from ..models.evaluation_judged import EvaluationJudged
    from ..models.run_summary import RunSummary


T = TypeVar("T", bound="CaseReport")


@_attrs_define
class CaseReport:
    """One case of an evaluation's report.

    Attributes:
        case (int):
        checks (list[Check]):
        divergences (list[Divergence]):
        inputs (CaseReportInputs):
        replayed_calls (int): Tool calls answered from the recorded run (replay).
        judged (EvaluationJudged | None | Unset):
        passed (bool | None | Unset): Whether the case passed: it completed, and every check held. `null` until its run
            has ended.
        reference (None | RunSummary | Unset):
        run (None | RunSummary | Unset):
    """

    case: int
    checks: list[Check]
    divergences: list[Divergence]
    inputs: CaseReportInputs
    replayed_calls: int
    judged: EvaluationJudged | None | Unset = UNSET
    passed: bool | None | Unset = UNSET
    reference: None | RunSummary | Unset = UNSET
    run: None | RunSummary | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.evaluation_judged import EvaluationJudged
        from ..models.run_summary import RunSummary

        case = self.case

        checks = []
        for checks_item_data in self.checks:
            checks_item = checks_item_data.to_dict()
            checks.append(checks_item)

        divergences = []
        for divergences_item_data in self.divergences:
            divergences_item = divergences_item_data.to_dict()
            divergences.append(divergences_item)

        inputs = self.inputs.to_dict()

        replayed_calls = self.replayed_calls

        judged: dict[str, Any] | None | Unset
        if isinstance(self.judged, Unset):
            judged = UNSET
        elif isinstance(self.judged, EvaluationJudged):
            judged = self.judged.to_dict()
        else:
            judged = self.judged

        passed: bool | None | Unset
        if isinstance(self.passed, Unset):
            passed = UNSET
        else:
            passed = self.passed

        reference: dict[str, Any] | None | Unset
        if isinstance(self.reference, Unset):
            reference = UNSET
        elif isinstance(self.reference, RunSummary):
            reference = self.reference.to_dict()
        else:
            reference = self.reference

        run: dict[str, Any] | None | Unset
        if isinstance(self.run, Unset):
            run = UNSET
        elif isinstance(self.run, RunSummary):
            run = self.run.to_dict()
        else:
            run = self.run

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "case": case,
                "checks": checks,
                "divergences": divergences,
                "inputs": inputs,
                "replayed_calls": replayed_calls,
            }
        )
        if judged is not UNSET:
            field_dict["judged"] = judged
        if passed is not UNSET:
            field_dict["passed"] = passed
        if reference is not UNSET:
            field_dict["reference"] = reference
        if run is not UNSET:
            field_dict["run"] = run

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.case_report_inputs import CaseReportInputs
        from ..models.check import Check
        from ..models.divergence import Divergence
        from ..models.evaluation_judged import EvaluationJudged
        from ..models.run_summary import RunSummary

        d = dict(src_dict)
        case = d.pop("case")

        checks = []
        _checks = d.pop("checks")
        for checks_item_data in _checks:
            checks_item = Check.from_dict(checks_item_data)

            checks.append(checks_item)

        divergences = []
        _divergences = d.pop("divergences")
        for divergences_item_data in _divergences:
            divergences_item = Divergence.from_dict(divergences_item_data)

            divergences.append(divergences_item)

        inputs = CaseReportInputs.from_dict(d.pop("inputs"))

        replayed_calls = d.pop("replayed_calls")

        def _parse_judged(data: object) -> EvaluationJudged | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                judged_type_1 = EvaluationJudged.from_dict(data)

                return judged_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvaluationJudged | None | Unset, data)

        judged = _parse_judged(d.pop("judged", UNSET))

        def _parse_passed(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        passed = _parse_passed(d.pop("passed", UNSET))

        def _parse_reference(data: object) -> None | RunSummary | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                reference_type_1 = RunSummary.from_dict(data)

                return reference_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunSummary | Unset, data)

        reference = _parse_reference(d.pop("reference", UNSET))

        def _parse_run(data: object) -> None | RunSummary | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                run_type_1 = RunSummary.from_dict(data)

                return run_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunSummary | Unset, data)

        run = _parse_run(d.pop("run", UNSET))

        case_report = cls(
            case=case,
            checks=checks,
            divergences=divergences,
            inputs=inputs,
            replayed_calls=replayed_calls,
            judged=judged,
            passed=passed,
            reference=reference,
            run=run,
        )

        case_report.additional_properties = d
        return case_report

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
