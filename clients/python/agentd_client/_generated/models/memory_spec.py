from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="MemorySpec")


@_attrs_define
class MemorySpec:
    """A crew's memory.

    Attributes:
        scope (str): The scope the crew's runs save to and recall from, interpolated from the inputs like the
            crew's texts (`"user:{user_id}"`): at most 256 characters once interpolated, not blank, no control characters. A
            kickoff's `memory_scope` replaces it.
        embedding (None | str | Unset): `<provider>/<model>` of an embedding model: items are saved with their vectors
            and
            recalled by meaning fused with their words (the database needs pgvector). Without one,
            recall is by words and recency.
        extract (bool | Unset): Also ask the task's model for the facts and entities of each answer, saved as items of
            their own (a side call, journaled and counted in the run's spend).
        k (int | Unset): Items a task's prompt receives (the most relevant to it, from earlier runs). Default: 5.
    """

    scope: str
    embedding: None | str | Unset = UNSET
    extract: bool | Unset = UNSET
    k: int | Unset = 5

    def to_dict(self) -> dict[str, Any]:
        scope = self.scope

        embedding: None | str | Unset
        if isinstance(self.embedding, Unset):
            embedding = UNSET
        else:
            embedding = self.embedding

        extract = self.extract

        k = self.k

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "scope": scope,
            }
        )
        if embedding is not UNSET:
            field_dict["embedding"] = embedding
        if extract is not UNSET:
            field_dict["extract"] = extract
        if k is not UNSET:
            field_dict["k"] = k

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scope = d.pop("scope")

        def _parse_embedding(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        embedding = _parse_embedding(d.pop("embedding", UNSET))

        extract = d.pop("extract", UNSET)

        k = d.pop("k", UNSET)

        memory_spec = cls(
            scope=scope,
            embedding=embedding,
            extract=extract,
            k=k,
        )

        return memory_spec
