from enum import StrEnum


class EventDataType16Type(StrEnum):
    TOOL_REJECTED = "tool.rejected"

    def __str__(self) -> str:
        return str(self.value)
