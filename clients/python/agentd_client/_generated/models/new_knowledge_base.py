from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.chunking import Chunking


T = TypeVar("T", bound="NewKnowledgeBase")


@_attrs_define
class NewKnowledgeBase:
    """The body of `POST /v1/knowledge`.

    Attributes:
        name (str): Letters, digits, `-`, `_`, `.` (1 to 100); unique in the tenant.
        chunking (Chunking | None | Unset):
        description (None | str | Unset): Lines of text (line feeds and tabs, no other control characters).
        embedding (None | str | Unset): `<provider>/<model>` of an embedding model (OpenAI-compatible `POST
            /embeddings`): chunks
            are embedded and the base is searched hybrid. Needs pgvector in the database.
    """

    name: str
    chunking: Chunking | None | Unset = UNSET
    description: None | str | Unset = UNSET
    embedding: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.chunking import Chunking

        name = self.name

        chunking: dict[str, Any] | None | Unset
        if isinstance(self.chunking, Unset):
            chunking = UNSET
        elif isinstance(self.chunking, Chunking):
            chunking = self.chunking.to_dict()
        else:
            chunking = self.chunking

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        embedding: None | str | Unset
        if isinstance(self.embedding, Unset):
            embedding = UNSET
        else:
            embedding = self.embedding

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if chunking is not UNSET:
            field_dict["chunking"] = chunking
        if description is not UNSET:
            field_dict["description"] = description
        if embedding is not UNSET:
            field_dict["embedding"] = embedding

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.chunking import Chunking

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_chunking(data: object) -> Chunking | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                chunking_type_1 = Chunking.from_dict(data)

                return chunking_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Chunking | None | Unset, data)

        chunking = _parse_chunking(d.pop("chunking", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_embedding(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        embedding = _parse_embedding(d.pop("embedding", UNSET))

        new_knowledge_base = cls(
            name=name,
            chunking=chunking,
            description=description,
            embedding=embedding,
        )

        new_knowledge_base.additional_properties = d
        return new_knowledge_base

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
