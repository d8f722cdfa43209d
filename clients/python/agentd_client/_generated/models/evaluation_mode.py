from enum import StrEnum


class EvaluationMode(StrEnum):
    LIVE = "live"
    REPLAY = "replay"

    def __str__(self) -> str:
        return str(self.value)
