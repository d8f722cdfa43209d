from enum import StrEnum


class DocumentSource(StrEnum):
    TEXT = "text"
    UPLOAD = "upload"
    URL = "url"

    def __str__(self) -> str:
        return str(self.value)
