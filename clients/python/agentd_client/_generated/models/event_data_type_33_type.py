from enum import StrEnum


class EventDataType33Type(StrEnum):
    STEP_COMPLETED = "step.completed"

    def __str__(self) -> str:
        return str(self.value)
