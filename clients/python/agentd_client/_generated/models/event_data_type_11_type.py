from enum import StrEnum


class EventDataType11Type(StrEnum):
    TOOL_STARTED = "tool.started"

    def __str__(self) -> str:
        return str(self.value)
