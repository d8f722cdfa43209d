from enum import StrEnum


class EventDataType23Type(StrEnum):
    TASK_FAILED = "task.failed"

    def __str__(self) -> str:
        return str(self.value)
