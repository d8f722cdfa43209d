from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="NewMemoryNote")


@_attrs_define
class NewMemoryNote:
    """The body of `POST /v1/memories`.

    Attributes:
        scope (str): The scope it belongs to (`user:42`): 1 to 256 characters, not blank, no control
            characters.
        text (str): What to remember (at most 4,096 bytes).
        embedding (None | str | Unset): `<provider>/<model>`: save the item with its vector by this embedding model, so
            crews
            whose memory names the model recall it by meaning (the database needs pgvector).
    """

    scope: str
    text: str
    embedding: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        scope = self.scope

        text = self.text

        embedding: None | str | Unset
        if isinstance(self.embedding, Unset):
            embedding = UNSET
        else:
            embedding = self.embedding

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "scope": scope,
                "text": text,
            }
        )
        if embedding is not UNSET:
            field_dict["embedding"] = embedding

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scope = d.pop("scope")

        text = d.pop("text")

        def _parse_embedding(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        embedding = _parse_embedding(d.pop("embedding", UNSET))

        new_memory_note = cls(
            scope=scope,
            text=text,
            embedding=embedding,
        )

        new_memory_note.additional_properties = d
        return new_memory_note

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
