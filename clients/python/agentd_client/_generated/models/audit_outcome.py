from enum import StrEnum


class AuditOutcome(StrEnum):
    CONFLICT = "conflict"
    DENIED = "denied"
    FAILED = "failed"
    INVALID = "invalid"
    NOT_FOUND = "not_found"
    REFUSED = "refused"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
