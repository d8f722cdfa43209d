from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.evaluation_mode import EvaluationMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.case_report import CaseReport
    from ..models.report_summary import ReportSummary


T = TypeVar("T", bound="EvaluationBody")


@_attrs_define
class EvaluationBody:
    """An evaluation and its report as of now: each case's run against its expectations and its
    reference run, and the totals.

        Attributes:
            case_count (int):
            created_at (datetime.datetime):
            crew (str): The crew's name.
            crew_ref (str): The crew as the request named it (`digest@staging`).
            crew_version (int): The version that reference named when the evaluation started: every case ran it.
            id (UUID):
            mode (EvaluationMode): How an evaluation runs its cases.
            safe_tools (list[str]):
            cases (list[CaseReport]):
            status (str): `running` until every case's run has ended, then `completed`.
            summary (ReportSummary): An evaluation's totals.
            created_by (None | str | Unset):
            dataset_id (None | Unset | UUID):
            judge_model (None | str | Unset): The model that judges the cases with a rubric, when the request named one
                (otherwise the
                default model).
    """

    case_count: int
    created_at: datetime.datetime
    crew: str
    crew_ref: str
    crew_version: int
    id: UUID
    mode: EvaluationMode
    safe_tools: list[str]
    cases: list[CaseReport]
    status: str
    summary: ReportSummary
    created_by: None | str | Unset = UNSET
    dataset_id: None | Unset | UUID = UNSET
    judge_model: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        case_count = self.case_count

        created_at = self.created_at.isoformat()

        crew = self.crew

        crew_ref = self.crew_ref

        crew_version = self.crew_version

        id = str(self.id)

        mode = self.mode.value

        safe_tools = self.safe_tools

        cases = []
        for cases_item_data in self.cases:
            cases_item = cases_item_data.to_dict()
            cases.append(cases_item)

        status = self.status

        summary = self.summary.to_dict()

        created_by: None | str | Unset
        if isinstance(self.created_by, Unset):
            created_by = UNSET
        else:
            created_by = self.created_by

        dataset_id: None | str | Unset
        if isinstance(self.dataset_id, Unset):
            dataset_id = UNSET
        elif isinstance(self.dataset_id, UUID):
            dataset_id = str(self.dataset_id)
        else:
            dataset_id = self.dataset_id

        judge_model: None | str | Unset
        if isinstance(self.judge_model, Unset):
            judge_model = UNSET
        else:
            judge_model = self.judge_model

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "case_count": case_count,
                "created_at": created_at,
                "crew": crew,
                "crew_ref": crew_ref,
                "crew_version": crew_version,
                "id": id,
                "mode": mode,
                "safe_tools": safe_tools,
                "cases": cases,
                "status": status,
                "summary": summary,
            }
        )
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if dataset_id is not UNSET:
            field_dict["dataset_id"] = dataset_id
        if judge_model is not UNSET:
            field_dict["judge_model"] = judge_model

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.case_report import CaseReport
        from ..models.report_summary import ReportSummary

        d = dict(src_dict)
        case_count = d.pop("case_count")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        crew = d.pop("crew")

        crew_ref = d.pop("crew_ref")

        crew_version = d.pop("crew_version")

        id = UUID(d.pop("id"))

        mode = EvaluationMode(d.pop("mode"))

        safe_tools = cast(list[str], d.pop("safe_tools"))

        cases = []
        _cases = d.pop("cases")
        for cases_item_data in _cases:
            cases_item = CaseReport.from_dict(cases_item_data)

            cases.append(cases_item)

        status = d.pop("status")

        summary = ReportSummary.from_dict(d.pop("summary"))

        def _parse_created_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        created_by = _parse_created_by(d.pop("created_by", UNSET))

        def _parse_dataset_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                dataset_id_type_0 = UUID(data)

                return dataset_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        dataset_id = _parse_dataset_id(d.pop("dataset_id", UNSET))

        def _parse_judge_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        judge_model = _parse_judge_model(d.pop("judge_model", UNSET))

        evaluation_body = cls(
            case_count=case_count,
            created_at=created_at,
            crew=crew,
            crew_ref=crew_ref,
            crew_version=crew_version,
            id=id,
            mode=mode,
            safe_tools=safe_tools,
            cases=cases,
            status=status,
            summary=summary,
            created_by=created_by,
            dataset_id=dataset_id,
            judge_model=judge_model,
        )

        evaluation_body.additional_properties = d
        return evaluation_body

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
