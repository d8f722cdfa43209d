"""A command-line MCP client on the official Python SDK (`mcp`, Streamable HTTP), which the
end-to-end tests spawn to talk to agentd's own MCP server at /mcp.

    python client.py --url URL [--key KEY] [--mode auto|legacy|2026-07-28] [--timeout S] COMMAND ...

    list                                      {"tools": [Tool, ...]}  (every page, in order)
    call TOOL ARGS_JSON [--progress]          {"progress": p, "total": t, "message": m} per
                                              progress notification (with --progress), then
                                              {"result": CallToolResult}
    cancel TOOL ARGS_JSON --after-progress N  calls with a progress token, cancels the call after
                                              N progress notifications, then {"cancelled": true}

Every line on stdout is one JSON object, flushed as it is written. Tools and results are dumped
by alias without nulls. Outcomes are lines too, and exit 0:

    {"error": {"code": int, "message": str[, "data": ...]}}   an MCP (JSON-RPC) error
    {"http_error": status}        a POST was refused with an HTTP status >= 400 whose body was
                                  not a JSON-RPC error (401, 403, a bare 404, ...)
    {"client_error": {"type": str, "message": str}}   the SDK refused the answer (a result that
                                  does not match its outputSchema, a malformed result, ...)
    {"transport_error": {"type": str, "message": str}}   connection refused/reset, ...

Anything else is a crash: {"crash": {...}} and exit 1.

--mode is the SDK Client's connect mode: auto (server/discover, falling back to initialize),
legacy (initialize handshake, 2025-11-25) or 2026-07-28 (stateless, no probe). --key sends
`Authorization: Bearer KEY` on every HTTP request (POST, GET and DELETE). --timeout is the
SDK's per-request read timeout in seconds (a timeout is the MCP error -32001).

`cancel` cancels the way the SDK's public API does: an anyio cancel scope around call_tool. In
the handshake era the SDK then POSTs `notifications/cancelled` {requestId, reason}; in the
2026-07-28 era it closes the request's response stream instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
import httpx2
from pydantic import ValidationError

from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

if sys.version_info < (3, 11):  # pragma: no cover - anyio brings the backport
    from exceptiongroup import BaseExceptionGroup

MAX_PAGES = 1000
# How long `cancel` lets the SDK's cancellation reach the server before the client closes.
CANCEL_SETTLE_SECONDS = 0.5


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


class HttpRefusals:
    """Remembers the last POST response: its status, and whether a >= 400 one carried a JSON-RPC error.

    The SDK turns an HTTP refusal without a JSON-RPC body into a synthesized MCP error
    (-32603, or -32601/-32600 for a 404); this is how `{"http_error": status}` tells them apart.
    Only POSTs count: the SDK's own GET stream and DELETE may be refused (405) harmlessly.
    """

    def __init__(self) -> None:
        self.refused: int | None = None

    async def hook(self, response: httpx2.Response) -> None:
        if response.request.method != "POST":
            return
        if response.status_code < 400:
            self.refused = None
            return
        self.refused = response.status_code
        try:
            body = json.loads(await response.aread())
        except Exception:
            return
        if isinstance(body, dict) and body.get("jsonrpc") == "2.0" and isinstance(body.get("error"), dict):
            self.refused = None


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(leaves(inner))
        return out
    return [exc]


def report(exc: BaseException, refusals: HttpRefusals) -> int:
    """Print the outcome line for an exception; return the exit code."""
    found = leaves(exc)
    for e in found:
        if isinstance(e, MCPError):
            if refusals.refused is not None:
                emit({"http_error": refusals.refused})
            else:
                error: dict[str, Any] = {"code": e.code, "message": e.message}
                if e.data is not None:
                    error["data"] = e.data
                emit({"error": error})
            return 0
    for e in found:
        if isinstance(e, httpx2.HTTPStatusError):
            emit({"http_error": e.response.status_code})
            return 0
        if isinstance(e, httpx2.TransportError):
            emit({"transport_error": {"type": type(e).__name__, "message": str(e)}})
            return 0
        if isinstance(e, (RuntimeError, ValidationError)):
            emit({"client_error": {"type": type(e).__name__, "message": str(e)}})
            return 0
    first = found[0] if found else exc
    emit({"crash": {"type": type(first).__name__, "message": str(first)}})
    return 1


async def cmd_list(client: Client) -> None:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(dump(t) for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    emit({"tools": tools})


async def on_progress_print(progress: float, total: float | None, message: str | None) -> None:
    emit({"progress": progress, "total": total, "message": message})


async def cmd_call(client: Client, tool: str, arguments: dict[str, Any], progress: bool) -> None:
    result = await client.call_tool(tool, arguments, progress_callback=on_progress_print if progress else None)
    emit({"result": dump(result)})


async def cmd_cancel(client: Client, tool: str, arguments: dict[str, Any], after: int) -> None:
    seen = 0
    scope = anyio.CancelScope()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        nonlocal seen
        emit({"progress": progress, "total": total, "message": message})
        seen += 1
        if seen >= after:
            scope.cancel()

    with scope:
        result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    if not scope.cancelled_caught:
        # The call finished before N progress notifications arrived.
        emit({"result": dump(result), "cancelled": False})
        return
    # The SDK sends its cancellation (legacy: a notifications/cancelled POST; 2026: closing the
    # response stream) from its own tasks; let it reach the server before the session closes.
    await anyio.sleep(CANCEL_SETTLE_SECONDS)
    emit({"cancelled": True})


async def run(args: argparse.Namespace) -> int:
    refusals = HttpRefusals()
    headers = {"Authorization": f"Bearer {args.key}"} if args.key is not None else None
    http = httpx2.AsyncClient(
        headers=headers,
        # The SDK's defaults: 30 s to connect/write, 5 min between reads of a held-open stream.
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [refusals.hook]},
    )
    try:
        async with http:
            transport = streamable_http_client(args.url, http_client=http)
            async with Client(
                transport, mode=args.mode, read_timeout_seconds=args.timeout, cache=None
            ) as client:
                if args.command == "list":
                    await cmd_list(client)
                elif args.command == "call":
                    await cmd_call(client, args.tool, args.arguments, args.progress)
                else:
                    await cmd_cancel(client, args.tool, args.arguments, args.after_progress)
        return 0
    except Exception as e:  # noqa: BLE001 - every outcome is reported as a JSON line
        return report(e, refusals)
    except BaseExceptionGroup as e:
        return report(e, refusals)


def json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("ARGS_JSON must be a JSON object")
    return value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--key")
    p.add_argument("--mode", default="auto", choices=["auto", "legacy", "2026-07-28"])
    p.add_argument("--timeout", type=float, default=None, help="per-request read timeout, seconds")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    c = sub.add_parser("call")
    c.add_argument("tool")
    c.add_argument("arguments", type=json_object)
    c.add_argument("--progress", action="store_true")
    k = sub.add_parser("cancel")
    k.add_argument("tool")
    k.add_argument("arguments", type=json_object)
    k.add_argument("--after-progress", type=int, required=True)
    args = p.parse_args()
    sys.exit(anyio.run(run, args))


if __name__ == "__main__":
    main()
