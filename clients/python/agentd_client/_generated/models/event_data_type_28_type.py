from enum import StrEnum


class EventDataType28Type(StrEnum):
    RUN_CANCELLED = "run.cancelled"

    def __str__(self) -> str:
        return str(self.value)
