from enum import StrEnum


class EventDataType21Type(StrEnum):
    AGENT_FINAL_ANSWER = "agent.final_answer"

    def __str__(self) -> str:
        return str(self.value)
