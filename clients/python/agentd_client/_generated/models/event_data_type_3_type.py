from enum import StrEnum


class EventDataType3Type(StrEnum):
    RUN_STARTED = "run.started"

    def __str__(self) -> str:
        return str(self.value)
