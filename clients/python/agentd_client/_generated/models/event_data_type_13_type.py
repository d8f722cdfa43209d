from enum import StrEnum


class EventDataType13Type(StrEnum):
    TOOL_FAILED = "tool.failed"

    def __str__(self) -> str:
        return str(self.value)
