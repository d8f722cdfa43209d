from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TenantUsage")


@_attrs_define
class TenantUsage:
    """A tenant's runs in flight and its spend of the UTC day.

    Attributes:
        cost_usd_today (float): US dollars spent today (UTC), counted while the tenant has a daily cap.
        queued (int): Runs queued now, counted against `max_queued`.
        running (int): Runs executing now (`running`, `cancelling`), counted against `max_running`.
        tokens_today (int): Tokens spent today (UTC), counted while the tenant has a daily cap.
    """

    cost_usd_today: float
    queued: int
    running: int
    tokens_today: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cost_usd_today = self.cost_usd_today

        queued = self.queued

        running = self.running

        tokens_today = self.tokens_today

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cost_usd_today": cost_usd_today,
                "queued": queued,
                "running": running,
                "tokens_today": tokens_today,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cost_usd_today = d.pop("cost_usd_today")

        queued = d.pop("queued")

        running = d.pop("running")

        tokens_today = d.pop("tokens_today")

        tenant_usage = cls(
            cost_usd_today=cost_usd_today,
            queued=queued,
            running=running,
            tokens_today=tokens_today,
        )

        tenant_usage.additional_properties = d
        return tenant_usage

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
