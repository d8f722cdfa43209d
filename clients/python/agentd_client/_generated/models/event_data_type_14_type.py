from enum import StrEnum


class EventDataType14Type(StrEnum):
    TOOL_APPROVAL_REQUESTED = "tool.approval_requested"

    def __str__(self) -> str:
        return str(self.value)
