from enum import StrEnum


class EventDataType12Type(StrEnum):
    TOOL_FINISHED = "tool.finished"

    def __str__(self) -> str:
        return str(self.value)
