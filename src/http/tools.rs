//! `GET /v1/tools`: the built-in tools and their argument schemas.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::tools::{builtin_tools, ToolInfo};

/// The built-in tools.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    pub tools: Vec<ToolInfo>,
}

/// List the built-in tools agents may use, with their JSON schemas.
#[utoipa::path(get, path = "/tools", tag = "tools", responses((status = 200, body = ToolList)))]
pub async fn list_tools() -> Json<ToolList> {
    Json(ToolList { tools: builtin_tools() })
}
