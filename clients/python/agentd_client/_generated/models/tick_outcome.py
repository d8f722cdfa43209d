from enum import StrEnum


class TickOutcome(StrEnum):
    FAILED = "failed"
    KICKED = "kicked"
    MISSED = "missed"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return str(self.value)
