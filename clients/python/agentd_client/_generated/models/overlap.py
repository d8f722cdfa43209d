from enum import StrEnum


class Overlap(StrEnum):
    ALLOW = "allow"
    ENQUEUE = "enqueue"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)
