from enum import StrEnum


class EventDataType6Type(StrEnum):
    MEMORY_RETRIEVED = "memory.retrieved"

    def __str__(self) -> str:
        return str(self.value)
