from enum import StrEnum


class EventDataType25Type(StrEnum):
    RUN_RESUMED = "run.resumed"

    def __str__(self) -> str:
        return str(self.value)
