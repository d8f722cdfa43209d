from enum import StrEnum


class EventDataType35Type(StrEnum):
    EVALUATION_JUDGED = "evaluation.judged"

    def __str__(self) -> str:
        return str(self.value)
