//! Threads (`/v1/threads`): a tenant's conversations of runs. Creating one, reading one with its
//! runs, listing them (by metadata), deleting one with its runs. Runs join a thread through a
//! kickoff's `thread_id` (see [`kickoffs`](super::kickoffs)), and a protocol's conversation (an
//! A2A `contextId`, an AG-UI `threadId`) through the thread it names.

use serde::Deserialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::crew::Protocol;
use crate::domain::thread::ThreadPage;
use crate::domain::thread::{conversation_thread, Thread};
use crate::domain::validate::parse_json;
use crate::domain::Caller;
use crate::domain::ThreadId;
use crate::store::{Audit, ThreadDeleted};

/// The most bytes of a thread's metadata (as JSON).
pub const MAX_THREAD_METADATA_BYTES: usize = 16 * 1024;

/// The body of `POST /v1/threads`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThreadBody {
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl Services {
    /// A new thread: `{"metadata"?}`.
    pub async fn create_thread(&self, caller: &Caller, body: Value, audit: &Audit) -> ServiceResult<Thread> {
        let body: ThreadBody = parse_json(body).map_err(ServiceError::Invalid)?;
        if Value::Object(body.metadata.clone()).to_string().len() > MAX_THREAD_METADATA_BYTES {
            return Err(invalid(
                "metadata",
                format!("must be at most {MAX_THREAD_METADATA_BYTES} bytes as JSON"),
            ));
        }
        Ok(self.store.create_thread(&caller.tenant, &body.metadata, audit).await?)
    }

    /// The thread a protocol's conversation id names for the caller's tenant: one of the tenant's
    /// threads by its id; any other text (a made-up id, another tenant's thread id) names the
    /// tenant's own thread derived from it ([`conversation_thread`]), created on first use with
    /// the id in its metadata (`a2a_id`, `ag_ui_id`). Another tenant's thread is thus, to the
    /// caller, an id that names no thread: it neither joins nor sees it.
    pub async fn protocol_thread(
        &self,
        caller: &Caller,
        protocol: Protocol,
        conversation: &str,
    ) -> ServiceResult<ThreadId> {
        let tenant = &caller.tenant;
        let derived = conversation_thread(tenant, protocol.as_str(), conversation);
        let named = conversation.parse::<Uuid>().ok();
        let metadata = Map::from_iter([(format!("{}_id", protocol.as_str()), Value::from(conversation))]);
        match self.store.conversation_thread(tenant, named.map(ThreadId), derived, &metadata).await? {
            Some(thread) => Ok(thread),
            None => Err(ServiceError::Internal(crate::store::StoreError::Corrupt(format!(
                "the thread derived for a {} conversation of '{tenant}' is another tenant's",
                protocol.as_str()
            )))),
        }
    }

    /// One of the caller's tenant's threads, with its runs.
    pub async fn thread(&self, caller: &Caller, id: ThreadId) -> ServiceResult<Thread> {
        self.store.get_thread(&caller.tenant, id).await?.ok_or_else(|| no_thread(id))
    }

    /// The tenant's threads, newest first; with `metadata` (`key:value`), those whose metadata has
    /// that key with that string value.
    pub async fn threads(
        &self,
        caller: &Caller,
        metadata: Option<&str>,
        before: Option<ThreadId>,
        limit: i64,
    ) -> ServiceResult<ThreadPage> {
        let filter = match metadata {
            None => None,
            Some(text) => match text.split_once(':') {
                Some((key, value)) if !key.is_empty() && !text.contains('\0') => {
                    Some(Map::from_iter([(key.to_owned(), Value::String(value.to_owned()))]))
                }
                _ => return Err(invalid("metadata", "must be key:value, e.g. user:42")),
            },
        };
        Ok(self.store.list_threads(&caller.tenant, filter.as_ref(), before, limit).await?)
    }

    /// Delete a thread with its runs; refused while one of them is running.
    pub async fn delete_thread(&self, caller: &Caller, id: ThreadId, audit: &Audit) -> ServiceResult<u64> {
        match self.store.delete_thread(&caller.tenant, id, audit).await? {
            ThreadDeleted::Deleted { runs } => Ok(runs),
            ThreadDeleted::NotFound => Err(no_thread(id)),
            ThreadDeleted::Running(run) => Err(ServiceError::Conflict(format!(
                "run {run} of the thread is running: cancel it (POST /v1/runs/{run}/cancel) and delete the thread \
                 once it has stopped"
            ))),
        }
    }
}

/// "No such thread" (also for another tenant's).
fn no_thread(id: ThreadId) -> ServiceError {
    ServiceError::NotFound(format!("no thread {id}"))
}
