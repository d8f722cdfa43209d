from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.dataset_case import DatasetCase
    from ..models.expectations import Expectations


T = TypeVar("T", bound="DatasetRequest")


@_attrs_define
class DatasetRequest:
    """The body of `POST /v1/datasets`: cases given, or made from past runs.

    Attributes:
        name (str): A name for people (1 to 200 characters, one line).
        cases (list[DatasetCase] | None | Unset): The cases (at most 1,000). Give `cases` or `from_runs`.
        description (None | str | Unset):
        expect (Expectations | None | Unset):
        from_runs (list[str] | None | Unset): Past runs of the tenant, each made a case: its inputs, and as reference
            its id and output
            (at most 1,000; each must have ended).
    """

    name: str
    cases: list[DatasetCase] | None | Unset = UNSET
    description: None | str | Unset = UNSET
    expect: Expectations | None | Unset = UNSET
    from_runs: list[str] | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.expectations import Expectations

        name = self.name

        cases: list[dict[str, Any]] | None | Unset
        if isinstance(self.cases, Unset):
            cases = UNSET
        elif isinstance(self.cases, list):
            cases = []
            for cases_type_0_item_data in self.cases:
                cases_type_0_item = cases_type_0_item_data.to_dict()
                cases.append(cases_type_0_item)

        else:
            cases = self.cases

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        expect: dict[str, Any] | None | Unset
        if isinstance(self.expect, Unset):
            expect = UNSET
        elif isinstance(self.expect, Expectations):
            expect = self.expect.to_dict()
        else:
            expect = self.expect

        from_runs: list[str] | None | Unset
        if isinstance(self.from_runs, Unset):
            from_runs = UNSET
        elif isinstance(self.from_runs, list):
            from_runs = self.from_runs

        else:
            from_runs = self.from_runs

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if cases is not UNSET:
            field_dict["cases"] = cases
        if description is not UNSET:
            field_dict["description"] = description
        if expect is not UNSET:
            field_dict["expect"] = expect
        if from_runs is not UNSET:
            field_dict["from_runs"] = from_runs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.dataset_case import DatasetCase
        from ..models.expectations import Expectations

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_cases(data: object) -> list[DatasetCase] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                cases_type_0 = []
                _cases_type_0 = data
                for cases_type_0_item_data in _cases_type_0:
                    cases_type_0_item = DatasetCase.from_dict(cases_type_0_item_data)

                    cases_type_0.append(cases_type_0_item)

                return cases_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[DatasetCase] | None | Unset, data)

        cases = _parse_cases(d.pop("cases", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

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

        def _parse_from_runs(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                from_runs_type_0 = cast(list[str], data)

                return from_runs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        from_runs = _parse_from_runs(d.pop("from_runs", UNSET))

        dataset_request = cls(
            name=name,
            cases=cases,
            description=description,
            expect=expect,
            from_runs=from_runs,
        )

        return dataset_request
