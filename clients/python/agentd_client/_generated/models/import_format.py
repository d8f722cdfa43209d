from enum import StrEnum


class ImportFormat(StrEnum):
    CREWAI = "crewai"

    def __str__(self) -> str:
        return str(self.value)
