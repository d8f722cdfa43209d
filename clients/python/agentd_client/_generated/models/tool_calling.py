from enum import StrEnum


class ToolCalling(StrEnum):
    AUTO = "auto"
    NATIVE = "native"
    REACT = "react"

    def __str__(self) -> str:
        return str(self.value)
