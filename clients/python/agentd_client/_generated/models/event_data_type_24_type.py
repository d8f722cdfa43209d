from enum import StrEnum


class EventDataType24Type(StrEnum):
    RUN_AWAITING_INPUT = "run.awaiting_input"

    def __str__(self) -> str:
        return str(self.value)
