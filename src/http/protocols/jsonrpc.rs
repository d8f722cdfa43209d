//! JSON-RPC 2.0 as the MCP server and the A2A agents speak it: one message per HTTP request (a
//! request, a notification or a response), the standard error codes, and the mapping of a use
//! case's [`ServiceError`] onto an error object.

use serde_json::{json, Value};

use crate::domain::KeyEnd;
use crate::service::ServiceError;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// This server's code (in JSON-RPC's range for implementations, clear of MCP's and A2A's own) for
/// a stream whose key ended while it was open: revoked, expired, or its tenant deleted.
pub const KEY_ENDED: i64 = -32050;

/// A JSON-RPC 2.0 message as a client sends it (the OpenAPI document's view: the methods and
/// their params are the protocol's).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct JsonRpcMessage {
    /// `"2.0"`.
    #[schema(pattern = "^2\\.0$", example = "2.0")]
    jsonrpc: String,
    /// A request's id; none in a notification.
    #[schema(schema_with = request_id)]
    id: Option<Value>,
    /// The method (`tools/call`, `SendMessage`, …); none in a response to the server.
    #[schema(nullable = false)]
    method: Option<String>,
    #[schema(value_type = Option<Object>, nullable = false)]
    params: Option<Value>,
}

/// A JSON-RPC 2.0 response: `result` or `error` (`code`, `message`, `data`).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct JsonRpcResponse {
    jsonrpc: String,
    /// The request's id (`null` when the request could not be read).
    #[schema(schema_with = response_id)]
    id: Option<Value>,
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
    #[schema(value_type = Option<Object>)]
    error: Option<Value>,
}

/// A request id: a string or an integer.
fn request_id() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new().schema_type(SchemaType::Array(vec![Type::String, Type::Integer])).build()
}

/// A response's id: the request's, or `null`.
fn response_id() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new().schema_type(SchemaType::Array(vec![Type::String, Type::Integer, Type::Null])).build()
}

/// An error object: `code`, `message`, and what the client may act on in `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// The error a protocol's stream ends with when the caller's key ended: `data.reason` says how
    /// (`key_revoked`, `key_expired`, `tenant_deleted`).
    pub fn key_ended(why: KeyEnd) -> Self {
        Self::new(KEY_ENDED, why.detail()).with_data(json!({"reason": why.as_str()}))
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// A use case's failure: invalid input is `INVALID_PARAMS` naming each field in `data.errors`;
    /// what is missing is `not_found` (each protocol has its own code for it); anything else
    /// keeps its message, and a fault of the server says no more than that.
    pub fn from_service(error: &ServiceError, not_found: i64) -> Self {
        match error {
            ServiceError::Invalid(errors) => {
                let fields: Vec<Value> =
                    errors.iter().map(|e| json!({"field": e.field, "message": e.message})).collect();
                let summary: Vec<String> =
                    errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
                Self::invalid_params(format!("invalid arguments: {}", summary.join("; ")))
                    .with_data(json!({"errors": fields}))
            }
            ServiceError::NotFound(message) => Self::new(not_found, message.clone()),
            ServiceError::Conflict(message)
            | ServiceError::NotConfigured(message)
            | ServiceError::Upstream(message) => Self::new(INVALID_REQUEST, message.clone()),
            ServiceError::Quota { message, retry_after } => Self::new(INTERNAL_ERROR, message.clone())
                .with_data(json!({"retry_after_s": retry_after.as_secs().max(1)})),
            ServiceError::Unavailable(_) => {
                Self::new(INTERNAL_ERROR, "the database is unavailable; retry later")
            }
            ServiceError::Internal(_) => Self::new(INTERNAL_ERROR, "internal error"),
        }
    }
}

/// One JSON-RPC message a client sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it gets a response with its `id`.
    Request { id: Value, method: String, params: Value },
    /// A notification: no `id`, no response.
    Notification { method: String, params: Value },
    /// A response to a request of ours (none is ever sent: they are acknowledged and dropped).
    Response,
}

impl Incoming {
    /// Read one message. A malformed one is an error to answer with a `null` id (or the id it
    /// had, when it had one).
    pub fn parse(body: &[u8]) -> Result<Self, (Value, RpcError)> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| (Value::Null, RpcError::new(PARSE_ERROR, format!("the body is not JSON: {e}"))))?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Self, (Value, RpcError)> {
        let invalid = |id: Value, message: &str| Err((id, RpcError::new(INVALID_REQUEST, message)));
        let mut object = match value {
            Value::Object(object) => object,
            Value::Array(_) => {
                return invalid(Value::Null, "batches are not supported: send one message per request")
            }
            _ => return invalid(Value::Null, "a JSON-RPC message must be an object"),
        };
        let id = object.remove("id");
        if let Some(id) = &id {
            if !(id.is_string() || id.is_i64() || id.is_u64()) {
                return invalid(Value::Null, "`id` must be a string or an integer");
            }
        }
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid(id.unwrap_or(Value::Null), "`jsonrpc` must be \"2.0\"");
        }
        let Some(method) = object.remove("method") else {
            if id.is_some() && (object.contains_key("result") || object.contains_key("error")) {
                return Ok(Incoming::Response);
            }
            return invalid(id.unwrap_or(Value::Null), "a request needs a `method`");
        };
        let Value::String(method) = method else {
            return invalid(id.unwrap_or(Value::Null), "`method` must be a string");
        };
        let params = object.remove("params").unwrap_or(Value::Null);
        if !(params.is_object() || params.is_null()) {
            return invalid(id.unwrap_or(Value::Null), "`params` must be an object");
        }
        Ok(match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        })
    }
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// A notification from the server.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_requests_notifications_and_responses() {
        let request = Incoming::parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap();
        assert_eq!(
            request,
            Incoming::Request { id: json!(7), method: "tools/list".into(), params: Value::Null }
        );
        let note = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Incoming::Notification { .. }));
        let response = Incoming::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert_eq!(response, Incoming::Response);
    }

    #[test]
    fn refuses_what_is_not_one_message() {
        let code = |body: &[u8]| Incoming::parse(body).unwrap_err().1.code;
        assert_eq!(code(b"{"), PARSE_ERROR);
        assert_eq!(code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#), INVALID_REQUEST);
        let (id, error) = Incoming::parse(br#"{"jsonrpc":"2.0","id":3}"#).unwrap_err();
        assert_eq!((id, error.code), (json!(3), INVALID_REQUEST));
    }
}
