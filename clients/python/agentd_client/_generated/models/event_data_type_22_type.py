from enum import StrEnum


class EventDataType22Type(StrEnum):
    TASK_COMPLETED = "task.completed"

    def __str__(self) -> str:
        return str(self.value)
