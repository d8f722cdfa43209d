from enum import StrEnum


class ResumeStatus(StrEnum):
    CANCELLED = "cancelled"
    RESOLVED = "resolved"

    def __str__(self) -> str:
        return str(self.value)
