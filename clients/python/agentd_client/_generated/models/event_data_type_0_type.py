from enum import StrEnum


class EventDataType0Type(StrEnum):
    RUN_QUEUED = "run.queued"

    def __str__(self) -> str:
        return str(self.value)
