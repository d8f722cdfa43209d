from enum import StrEnum


class MemoryKind(StrEnum):
    ENTITY = "entity"
    FACT = "fact"
    NOTE = "note"
    TASK = "task"

    def __str__(self) -> str:
        return str(self.value)
