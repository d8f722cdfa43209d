from enum import StrEnum


class EventDataType9Type(StrEnum):
    LLM_FINISHED = "llm.finished"

    def __str__(self) -> str:
        return str(self.value)
