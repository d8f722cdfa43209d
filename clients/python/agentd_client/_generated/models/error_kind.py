from enum import StrEnum


class ErrorKind(StrEnum):
    BUDGET = "budget"
    CANCELLED = "cancelled"
    INTERNAL = "internal"
    LIMIT = "limit"
    LLM_ERROR = "llm_error"
    MAX_ITER = "max_iter"
    QUARANTINED = "quarantined"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"

    def __str__(self) -> str:
        return str(self.value)
