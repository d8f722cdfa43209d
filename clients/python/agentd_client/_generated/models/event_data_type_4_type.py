from enum import StrEnum


class EventDataType4Type(StrEnum):
    TASK_STARTED = "task.started"

    def __str__(self) -> str:
        return str(self.value)
