from enum import StrEnum


class EventDataType8Type(StrEnum):
    LLM_STARTED = "llm.started"

    def __str__(self) -> str:
        return str(self.value)
