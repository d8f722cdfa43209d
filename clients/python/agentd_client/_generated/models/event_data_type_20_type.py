from enum import StrEnum


class EventDataType20Type(StrEnum):
    RUN_THROTTLED = "run.throttled"

    def __str__(self) -> str:
        return str(self.value)
