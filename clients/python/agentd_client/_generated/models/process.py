from enum import StrEnum


class Process(StrEnum):
    HIERARCHICAL = "hierarchical"
    SEQUENTIAL = "sequential"

    def __str__(self) -> str:
        return str(self.value)
