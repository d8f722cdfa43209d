//! Typed identifiers: one type per kind of resource, so a thread's id cannot be passed where a
//! run's is expected. Ids are UUID v7, so they sort by creation time; a tenant is known by its
//! name. They are transparent on the wire (serde) and in the database (sqlx): a `RunId` is a
//! UUID in JSON and a `uuid` column, a `TenantId` a string and a `text` column.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// Define a UUID id type for a kind of resource.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The UUID itself (what the database and the wire hold).
            pub fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }
    };
}

uuid_id! {
    /// The id of a run.
    #[derive(ToSchema)]
    #[schema(value_type = String, format = Uuid)]
    RunId
}
uuid_id! {
    /// The id of a thread (a conversation that runs continue).
    ThreadId
}
uuid_id! {
    /// The id of a schedule.
    ScheduleId
}
uuid_id! {
    /// The id of a knowledge base.
    BaseId
}
uuid_id! {
    /// The id of a document of a knowledge base.
    DocumentId
}
uuid_id! {
    /// The id of a memory item.
    MemoryId
}
uuid_id! {
    /// The id of a stored API key.
    KeyId
}
uuid_id! {
    /// The id of a webhook endpoint.
    WebhookId
}

/// A tenant, by its name (see [`super::tenant::check_tenant_name`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
#[serde(transparent)]
#[sqlx(transparent)]
pub struct TenantId(String);

impl TenantId {
    /// The tenant named `name` (not checked: names are checked where tenants are created).
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for TenantId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for TenantId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<&str> for TenantId {
    fn from(name: &str) -> Self {
        Self(name.to_owned())
    }
}

impl From<String> for TenantId {
    fn from(name: String) -> Self {
        Self(name)
    }
}

impl From<TenantId> for String {
    fn from(tenant: TenantId) -> Self {
        tenant.0
    }
}
