from enum import StrEnum


class EventDataType34Type(StrEnum):
    STEP_FAILED = "step.failed"

    def __str__(self) -> str:
        return str(self.value)
