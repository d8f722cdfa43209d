from enum import StrEnum


class SearchMode(StrEnum):
    FULLTEXT = "fulltext"
    HYBRID = "hybrid"
    VECTOR = "vector"

    def __str__(self) -> str:
        return str(self.value)
