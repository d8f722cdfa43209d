from enum import StrEnum


class CallPurpose(StrEnum):
    GUARDRAIL = "guardrail"
    JUDGE = "judge"
    MEMORY = "memory"
    PLANNER = "planner"
    SUMMARIZER = "summarizer"

    def __str__(self) -> str:
        return str(self.value)
