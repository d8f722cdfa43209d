from enum import StrEnum


class EventDataType1Type(StrEnum):
    RUN_FORKED = "run.forked"

    def __str__(self) -> str:
        return str(self.value)
