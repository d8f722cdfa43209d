from enum import StrEnum


class KeyEnd(StrEnum):
    KEY_EXPIRED = "key_expired"
    KEY_REVOKED = "key_revoked"
    TENANT_DELETED = "tenant_deleted"

    def __str__(self) -> str:
        return str(self.value)
