from enum import StrEnum


class EventDataType10Type(StrEnum):
    AGENT_THOUGHT = "agent.thought"

    def __str__(self) -> str:
        return str(self.value)
