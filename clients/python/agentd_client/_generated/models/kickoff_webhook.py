from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="KickoffWebhook")


@_attrs_define
class KickoffWebhook:
    """A kickoff's webhook: where to POST which of the run's events.

    Attributes:
        url (str): An `http` or `https` URL on a public address (or one the operator allows).
        events (list[str] | Unset): Event types, `<prefix>.*` (e.g. `task.*`) or `*` (the default).
    """

    url: str
    events: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        events: list[str] | Unset = UNSET
        if not isinstance(self.events, Unset):
            events = self.events

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if events is not UNSET:
            field_dict["events"] = events

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        url = d.pop("url")

        events = cast(list[str], d.pop("events", UNSET))

        kickoff_webhook = cls(
            url=url,
            events=events,
        )

        return kickoff_webhook
