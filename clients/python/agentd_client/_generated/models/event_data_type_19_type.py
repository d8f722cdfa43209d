from enum import StrEnum


class EventDataType19Type(StrEnum):
    AGENT_MAX_ITER = "agent.max_iter"

    def __str__(self) -> str:
        return str(self.value)
