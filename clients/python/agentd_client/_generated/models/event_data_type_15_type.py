from enum import StrEnum


class EventDataType15Type(StrEnum):
    TOOL_APPROVED = "tool.approved"

    def __str__(self) -> str:
        return str(self.value)
