from enum import StrEnum


class EventDataType31Type(StrEnum):
    TASK_PLANNED = "task.planned"

    def __str__(self) -> str:
        return str(self.value)
