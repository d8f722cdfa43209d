from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.approval_request_arguments_type_0 import ApprovalRequestArgumentsType0


T = TypeVar("T", bound="ApprovalRequest")


@_attrs_define
class ApprovalRequest:
    """The body of a decision on a tool call that awaits approval.

    Attributes:
        approve (bool): Run the call (`true`) or not (`false`: the model is told it was rejected).
        arguments (ApprovalRequestArgumentsType0 | None | Unset): Approving: the arguments to run with instead of the
            model's (checked against the
            tool's schema).
        reason (None | str | Unset): Rejecting: why (the model is told).
    """

    approve: bool
    arguments: ApprovalRequestArgumentsType0 | None | Unset = UNSET
    reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.approval_request_arguments_type_0 import (
            ApprovalRequestArgumentsType0,
        )

        approve = self.approve

        arguments: dict[str, Any] | None | Unset
        if isinstance(self.arguments, Unset):
            arguments = UNSET
        elif isinstance(self.arguments, ApprovalRequestArgumentsType0):
            arguments = self.arguments.to_dict()
        else:
            arguments = self.arguments

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "approve": approve,
            }
        )
        if arguments is not UNSET:
            field_dict["arguments"] = arguments
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.approval_request_arguments_type_0 import (
            ApprovalRequestArgumentsType0,
        )

        d = dict(src_dict)
        approve = d.pop("approve")

        def _parse_arguments(
            data: object,
        ) -> ApprovalRequestArgumentsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                arguments_type_0 = ApprovalRequestArgumentsType0.from_dict(data)

                return arguments_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApprovalRequestArgumentsType0 | None | Unset, data)

        arguments = _parse_arguments(d.pop("arguments", UNSET))

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        approval_request = cls(
            approve=approve,
            arguments=arguments,
            reason=reason,
        )

        approval_request.additional_properties = d
        return approval_request

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
