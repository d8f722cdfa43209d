from enum import StrEnum


class EventDataType30Type(StrEnum):
    GUARDRAIL_FAILED = "guardrail.failed"

    def __str__(self) -> str:
        return str(self.value)
