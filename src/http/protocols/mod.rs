//! The agent protocols on the floor of the HTTP edge: the MCP server (`mcp`), A2A (`a2a`) and
//! AG-UI (`ag_ui`), with what they share: JSON-RPC 2.0 (`jsonrpc`) and server-sent events fed
//! from a task (`feed`). Like the REST handlers, they call the use cases of
//! [`crate::service`] and nothing below them: a protocol adds its wire format, never a rule of its
//! own (`scripts/check-layers.py` holds these files to `crate::domain`, `crate::service` and the
//! HTTP edge's shared pieces).

pub mod a2a;
pub mod ag_ui;
mod feed;
mod jsonrpc;
pub mod mcp;
