from enum import StrEnum


class Scope(StrEnum):
    ADMIN = "admin"
    APPROVE = "approve"
    KICKOFF = "kickoff"
    MANAGE = "manage"
    READ = "read"

    def __str__(self) -> str:
        return str(self.value)
