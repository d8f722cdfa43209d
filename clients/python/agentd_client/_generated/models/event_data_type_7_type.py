from enum import StrEnum


class EventDataType7Type(StrEnum):
    MEMORY_SAVED = "memory.saved"

    def __str__(self) -> str:
        return str(self.value)
