from enum import StrEnum


class EventDataType2Type(StrEnum):
    RUN_RETRIED = "run.retried"

    def __str__(self) -> str:
        return str(self.value)
