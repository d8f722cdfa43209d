from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..models.evaluation_mode import EvaluationMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.expectations import Expectations


T = TypeVar("T", bound="EvaluationRequest")


@_attrs_define
class EvaluationRequest:
    """The body of `POST /v1/evaluations`.

    Attributes:
        crew (str): The registered crew to evaluate: `name`, `name@version`, `name@latest` or `name@alias`.
        dataset (None | Unset | UUID): The dataset whose cases it runs. Give `dataset` or `runs`.
        expect (Expectations | None | Unset):
        judge_model (None | str | Unset): The model that judges the cases with a rubric (`provider/model`, or a model of
            the default
            provider; at most 200 characters); by default the server's default model.
        mode (EvaluationMode | Unset): How an evaluation runs its cases.
        runs (list[str] | None | Unset): Past runs to run again as cases (as a dataset `from_runs` would make them).
        safe_tools (list[str] | Unset): Tools a replay runs for real when a call diverges from the recording (by default
            a
            divergent call is not executed).
    """

    crew: str
    dataset: None | Unset | UUID = UNSET
    expect: Expectations | None | Unset = UNSET
    judge_model: None | str | Unset = UNSET
    mode: EvaluationMode | Unset = UNSET
    runs: list[str] | None | Unset = UNSET
    safe_tools: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.expectations import Expectations

        crew = self.crew

        dataset: None | str | Unset
        if isinstance(self.dataset, Unset):
            dataset = UNSET
        elif isinstance(self.dataset, UUID):
            dataset = str(self.dataset)
        else:
            dataset = self.dataset

        expect: dict[str, Any] | None | Unset
        if isinstance(self.expect, Unset):
            expect = UNSET
        elif isinstance(self.expect, Expectations):
            expect = self.expect.to_dict()
        else:
            expect = self.expect

        judge_model: None | str | Unset
        if isinstance(self.judge_model, Unset):
            judge_model = UNSET
        else:
            judge_model = self.judge_model

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode.value

        runs: list[str] | None | Unset
        if isinstance(self.runs, Unset):
            runs = UNSET
        elif isinstance(self.runs, list):
            runs = self.runs

        else:
            runs = self.runs

        safe_tools: list[str] | Unset = UNSET
        if not isinstance(self.safe_tools, Unset):
            safe_tools = self.safe_tools

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "crew": crew,
            }
        )
        if dataset is not UNSET:
            field_dict["dataset"] = dataset
        if expect is not UNSET:
            field_dict["expect"] = expect
        if judge_model is not UNSET:
            field_dict["judge_model"] = judge_model
        if mode is not UNSET:
            field_dict["mode"] = mode
        if runs is not UNSET:
            field_dict["runs"] = runs
        if safe_tools is not UNSET:
            field_dict["safe_tools"] = safe_tools

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.expectations import Expectations

        d = dict(src_dict)
        crew = d.pop("crew")

        def _parse_dataset(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                dataset_type_0 = UUID(data)

                return dataset_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        dataset = _parse_dataset(d.pop("dataset", UNSET))

        def _parse_expect(data: object) -> Expectations | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                expect_type_1 = Expectations.from_dict(data)

                return expect_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Expectations | None | Unset, data)

        expect = _parse_expect(d.pop("expect", UNSET))

        def _parse_judge_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        judge_model = _parse_judge_model(d.pop("judge_model", UNSET))

        _mode = d.pop("mode", UNSET)
        mode: EvaluationMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = EvaluationMode(_mode)

        def _parse_runs(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                runs_type_0 = cast(list[str], data)

                return runs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        runs = _parse_runs(d.pop("runs", UNSET))

        safe_tools = cast(list[str], d.pop("safe_tools", UNSET))

        evaluation_request = cls(
            crew=crew,
            dataset=dataset,
            expect=expect,
            judge_model=judge_model,
            mode=mode,
            runs=runs,
            safe_tools=safe_tools,
        )

        return evaluation_request
