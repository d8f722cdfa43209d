from enum import StrEnum


class EventDataType18Type(StrEnum):
    AGENT_FALLBACK = "agent.fallback"

    def __str__(self) -> str:
        return str(self.value)
