"""A scripted MCP server on the official Python SDK (`mcp`, Streamable HTTP), for the cases the
reference server cannot be made to show: annotations we choose, a non-idempotent tool, a slow
tool to cancel, an error result, an image, structured content, paginated tools/list, the request
headers and `_meta` a call arrived with, and a restart that forgets every session.

    python server.py PORT CALL_LOG

Every tool call appends one JSON line to CALL_LOG (the tests read it to count calls).
"""

import asyncio
import base64
import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, ListToolsResult, TextContent, ToolAnnotations

PORT = int(sys.argv[1])
CALL_LOG = sys.argv[2]
PAGE = 3
# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True)
WRITES = ToolAnnotations(readOnlyHint=False, idempotentHint=False, destructiveHint=True)


def log(tool: str, ctx: Context, **fields) -> None:
    meta = ctx.request_context.meta
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    meta = dict(meta or {})
    headers = ctx.headers or {}
    entry = {"tool": tool, "meta": meta, "authorization": headers.get("authorization"),
             "traceparent": headers.get("traceparent"), **fields}
    with open(CALL_LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class PagedServer(MCPServer):
    """tools/list in pages of PAGE, the cursor being the next index."""

    async def _handle_list_tools(self, ctx, params):
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        next_cursor = str(end) if end < len(tools) else None
        return ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)


mcp = PagedServer("agentd-scripted")


@mcp.tool(annotations=READ_ONLY)
def whoami(ctx: Context) -> str:
    """Say which credentials the call arrived with."""
    log("whoami", ctx)
    return f"authorization={(ctx.headers or {}).get('authorization')}"


@mcp.tool(annotations=WRITES)
def record(note: str, ctx: Context) -> str:
    """Record a note (not idempotent: every call adds one)."""
    log("record", ctx, note=note)
    return f"recorded: {note}"


@mcp.tool(annotations=READ_ONLY)
def lookup(order_id: str, ctx: Context) -> str:
    """Look up an order by its id."""
    log("lookup", ctx, order_id=order_id)
    return f"order {order_id}: shipped"


@mcp.tool(annotations=READ_ONLY)
async def slow(seconds: float, ctx: Context) -> str:
    """Wait that long, then answer."""
    log("slow", ctx, phase="started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log("slow", ctx, phase="cancelled")
        raise
    log("slow", ctx, phase="finished")
    return "done waiting"


@mcp.tool(annotations=READ_ONLY)
def fail(ctx: Context) -> str:
    """Always fails."""
    log("fail", ctx)
    raise ToolError("the order service is down")


@mcp.tool(annotations=READ_ONLY)
def picture(ctx: Context) -> list:
    """A tiny picture."""
    log("picture", ctx)
    return [ImageContent(type="image", data=base64.b64encode(PIXEL).decode(), mime_type="image/png")]


class Weather(BaseModel):
    city: str
    temperature_c: int
    sky: str


@mcp.tool(annotations=READ_ONLY)
def weather(city: str, ctx: Context) -> Weather:
    """The weather in a city, as data."""
    log("weather", ctx, city=city)
    return Weather(city=city, temperature_c=21, sky="clear")


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT)
