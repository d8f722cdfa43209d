from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookWithSecret")


@_attrs_define
class WebhookWithSecret:
    """An endpoint with its signing secret, shown this once.

    Attributes:
        created_at (datetime.datetime):
        description (str):
        enabled (bool):
        events (list[str]): Event types, `<prefix>.*` or `*`.
        id (UUID):
        updated_at (datetime.datetime):
        url (str):
        secret (str): The Standard Webhooks secret (`whsec_...`) receivers verify signatures with.
        crew (None | str | Unset): Only this crew's runs (registered endpoints).
        disabled_reason (None | str | Unset): Why it was disabled: through the API, a 410 Gone, or the retry schedule
            used up.
        previous_secret_until (datetime.datetime | None | Unset): Until when the secret rotated out signs alongside the
            current one.
        run_id (None | Unset | UUID): The run whose kickoff carried it; `null`: registered.
    """

    created_at: datetime.datetime
    description: str
    enabled: bool
    events: list[str]
    id: UUID
    updated_at: datetime.datetime
    url: str
    secret: str
    crew: None | str | Unset = UNSET
    disabled_reason: None | str | Unset = UNSET
    previous_secret_until: datetime.datetime | None | Unset = UNSET
    run_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        description = self.description

        enabled = self.enabled

        events = self.events

        id = str(self.id)

        updated_at = self.updated_at.isoformat()

        url = self.url

        secret = self.secret

        crew: None | str | Unset
        if isinstance(self.crew, Unset):
            crew = UNSET
        else:
            crew = self.crew

        disabled_reason: None | str | Unset
        if isinstance(self.disabled_reason, Unset):
            disabled_reason = UNSET
        else:
            disabled_reason = self.disabled_reason

        previous_secret_until: None | str | Unset
        if isinstance(self.previous_secret_until, Unset):
            previous_secret_until = UNSET
        elif isinstance(self.previous_secret_until, datetime.datetime):
            previous_secret_until = self.previous_secret_until.isoformat()
        else:
            previous_secret_until = self.previous_secret_until

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        elif isinstance(self.run_id, UUID):
            run_id = str(self.run_id)
        else:
            run_id = self.run_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "description": description,
                "enabled": enabled,
                "events": events,
                "id": id,
                "updated_at": updated_at,
                "url": url,
                "secret": secret,
            }
        )
        if crew is not UNSET:
            field_dict["crew"] = crew
        if disabled_reason is not UNSET:
            field_dict["disabled_reason"] = disabled_reason
        if previous_secret_until is not UNSET:
            field_dict["previous_secret_until"] = previous_secret_until
        if run_id is not UNSET:
            field_dict["run_id"] = run_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        enabled = d.pop("enabled")

        events = cast(list[str], d.pop("events"))

        id = UUID(d.pop("id"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        url = d.pop("url")

        secret = d.pop("secret")

        def _parse_crew(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        crew = _parse_crew(d.pop("crew", UNSET))

        def _parse_disabled_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        disabled_reason = _parse_disabled_reason(d.pop("disabled_reason", UNSET))

        def _parse_previous_secret_until(
            data: object,
        ) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_secret_until_type_0 = datetime.datetime.fromisoformat(data)

                return previous_secret_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        previous_secret_until = _parse_previous_secret_until(
            d.pop("previous_secret_until", UNSET)
        )

        def _parse_run_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                run_id_type_0 = UUID(data)

                return run_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        run_id = _parse_run_id(d.pop("run_id", UNSET))

        webhook_with_secret = cls(
            created_at=created_at,
            description=description,
            enabled=enabled,
            events=events,
            id=id,
            updated_at=updated_at,
            url=url,
            secret=secret,
            crew=crew,
            disabled_reason=disabled_reason,
            previous_secret_until=previous_secret_until,
            run_id=run_id,
        )

        webhook_with_secret.additional_properties = d
        return webhook_with_secret

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
