from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.case_reference import CaseReference
    from ..models.dataset_case_inputs import DatasetCaseInputs
    from ..models.expectations import Expectations


T = TypeVar("T", bound="DatasetCase")


@_attrs_define
class DatasetCase:
    """One case of a dataset.

    Attributes:
        inputs (DatasetCaseInputs):
        expect (Expectations | None | Unset):
        reference (CaseReference | None | Unset):
    """

    inputs: DatasetCaseInputs
    expect: Expectations | None | Unset = UNSET
    reference: CaseReference | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.case_reference import CaseReference
        from ..models.expectations import Expectations

        inputs = self.inputs.to_dict()

        expect: dict[str, Any] | None | Unset
        if isinstance(self.expect, Unset):
            expect = UNSET
        elif isinstance(self.expect, Expectations):
            expect = self.expect.to_dict()
        else:
            expect = self.expect

        reference: dict[str, Any] | None | Unset
        if isinstance(self.reference, Unset):
            reference = UNSET
        elif isinstance(self.reference, CaseReference):
            reference = self.reference.to_dict()
        else:
            reference = self.reference

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "inputs": inputs,
            }
        )
        if expect is not UNSET:
            field_dict["expect"] = expect
        if reference is not UNSET:
            field_dict["reference"] = reference

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.case_reference import CaseReference
        from ..models.dataset_case_inputs import DatasetCaseInputs
        from ..models.expectations import Expectations

        d = dict(src_dict)
        inputs = DatasetCaseInputs.from_dict(d.pop("inputs"))

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

        def _parse_reference(data: object) -> CaseReference | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                reference_type_1 = CaseReference.from_dict(data)

                return reference_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CaseReference | None | Unset, data)

        reference = _parse_reference(d.pop("reference", UNSET))

        dataset_case = cls(
            inputs=inputs,
            expect=expect,
            reference=reference,
        )

        return dataset_case
