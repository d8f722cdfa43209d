from enum import StrEnum


class EventDataType5Type(StrEnum):
    KNOWLEDGE_RETRIEVED = "knowledge.retrieved"

    def __str__(self) -> str:
        return str(self.value)
