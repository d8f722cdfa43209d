from enum import StrEnum


class ToolSpecParametersType(StrEnum):
    OBJECT = "object"

    def __str__(self) -> str:
        return str(self.value)
