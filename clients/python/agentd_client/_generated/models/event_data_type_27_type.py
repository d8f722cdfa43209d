from enum import StrEnum


class EventDataType27Type(StrEnum):
    RUN_FAILED = "run.failed"

    def __str__(self) -> str:
        return str(self.value)
