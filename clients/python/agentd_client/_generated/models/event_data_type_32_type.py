from enum import StrEnum


class EventDataType32Type(StrEnum):
    STEP_STARTED = "step.started"

    def __str__(self) -> str:
        return str(self.value)
