from enum import StrEnum


class ThreadStatus(StrEnum):
    BUSY = "busy"
    IDLE = "idle"

    def __str__(self) -> str:
        return str(self.value)
