from enum import StrEnum


class EventDataType29Type(StrEnum):
    GUARDRAIL_PASSED = "guardrail.passed"

    def __str__(self) -> str:
        return str(self.value)
