from enum import StrEnum


class EventDataType17Type(StrEnum):
    AGENT_PARSE_ERROR = "agent.parse_error"

    def __str__(self) -> str:
        return str(self.value)
