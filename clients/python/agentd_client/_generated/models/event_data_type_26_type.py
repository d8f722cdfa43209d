from enum import StrEnum


class EventDataType26Type(StrEnum):
    RUN_COMPLETED = "run.completed"

    def __str__(self) -> str:
        return str(self.value)
