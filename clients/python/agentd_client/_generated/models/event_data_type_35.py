from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_data_type_35_type import EventDataType35Type

if TYPE_CHECKING:
    from ..models.evaluation_judged import EvaluationJudged


T = TypeVar("T", bound="EventDataType35")


@_attrs_define
class EventDataType35:
    """An evaluation's judge decided whether the case's output meets its rubric (before
    `run.completed`, in a case run whose case has a rubric).

        Attributes:
            data (EvaluationJudged): The judge's verdict on an evaluation case's output.
            type_ (EventDataType35Type):
    """

    data: EvaluationJudged
    type_: EventDataType35Type
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        type_ = self.type_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.evaluation_judged import EvaluationJudged

        d = dict(src_dict)
        data = EvaluationJudged.from_dict(d.pop("data"))

        type_ = EventDataType35Type(d.pop("type"))

        event_data_type_35 = cls(
            data=data,
            type_=type_,
        )

        event_data_type_35.additional_properties = d
        return event_data_type_35

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
