from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from .. import types
from ..types import UNSET, File, Unset

T = TypeVar("T", bound="NewDocumentUpload")


@_attrs_define
class NewDocumentUpload:
    """A document uploaded as `multipart/form-data`: its parts `file` and `title`, no other (an
    unknown part is a 422).

        Attributes:
            file (File): The file: text, Markdown, HTML, JSON, CSV or PDF (by its part's `Content-Type`, else its file
                name's extension), at most `AGENTD_MAX_DOCUMENT_BYTES`.
            title (None | str | Unset): The file's name when absent.
    """

    file: File
    title: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        file = self.file.to_tuple()

        title: None | str | Unset
        if isinstance(self.title, Unset):
            title = UNSET
        else:
            title = self.title

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "file": file,
            }
        )
        if title is not UNSET:
            field_dict["title"] = title

        return field_dict

    def to_multipart(self) -> types.RequestFiles:
        files: types.RequestFiles = []

        files.append(("file", self.file.to_tuple()))

        if not isinstance(self.title, Unset):
            if isinstance(self.title, str):
                files.append(("title", (None, str(self.title).encode(), "text/plain")))
            else:
                files.append(("title", (None, str(self.title).encode(), "text/plain")))

        return files

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        file = File(payload=BytesIO(d.pop("file")))

        def _parse_title(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        title = _parse_title(d.pop("title", UNSET))

        new_document_upload = cls(
            file=file,
            title=title,
        )

        return new_document_upload
