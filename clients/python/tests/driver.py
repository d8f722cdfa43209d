#!/usr/bin/env python3
"""Drives the Python client for agentd's end-to-end tests, which run it and read its stdout.

    python driver.py --url URL [--key KEY] COMMAND ARGS

Prints one JSON object per line, flushed as soon as it is known. Exits 0 on success; otherwise
non-zero with a message on stderr.

Commands:
    follow RUN_ID              {"event": <envelope>} per event, {"resumed": {"last_event_id": ..}}
                               at each resumption, then {"done": "<terminal event type>"}
    kickoff-and-wait BODY      {"kicked": {"id", "idempotency_key"}}, then {"run": <final run>};
                               BODY is '{"crew": ..., "inputs": ...}'
    approve RUN_ID             {"approval_requested": <data>}, {"approved": <answer>}, {"run": ..}
    verify-webhook SECRET      reads {"headers": {..}, "body": "<raw body>"} from stdin; prints
                               {"verified": <payload>} or {"rejected": "<why>"} (exit 0 both ways)
    problem                    kicks off a crew whose task's agent is "ghost"; prints
                               {"problem": {"kind", "status", "type", "title", "detail", "errors"}}
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

# Runs from a checkout too, where the client is not installed in the interpreter.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentd_client import (  # noqa: E402
    Agentd,
    AgentdError,
    ProblemError,
    Run,
    WebhookVerificationError,
    verify_webhook,
)


def emit(document: dict[str, Any]) -> None:
    """Print one line of JSON, at once."""
    print(json.dumps(document), flush=True)


def follow(client: Agentd, run_id: str) -> None:
    def resumed(last_event_id: str | None) -> None:
        emit({"resumed": {"last_event_id": last_event_id}})

    for event in client.events(run_id, on_reconnect=resumed):
        emit({"event": event.envelope})
        if event.is_terminal:
            emit({"done": event.type})
            return
    raise AgentdError(f"the events of run {run_id} ended without a terminal event")


def kickoff_and_wait(client: Agentd, body_json: str) -> None:
    body = json.loads(body_json)
    crew = body.pop("crew")
    inputs = body.pop("inputs", None)

    def kicked(run: Run, idempotency_key: str) -> None:
        emit({"kicked": {"id": str(run.id), "idempotency_key": idempotency_key}})

    run = client.kickoff_and_wait(crew, inputs, on_kickoff=kicked, **body)
    emit({"run": run.to_dict()})


def approve(client: Agentd, run_id: str) -> None:
    with closing(client.events(run_id)) as events:
        for event in events:
            if event.type == "tool.approval_requested":
                emit({"approval_requested": event.data})
                break
        else:
            raise AgentdError(f"run {run_id} ended without asking for an approval")
    answer = client.approve_tool_call(run_id, event.data["tool_call_id"])
    emit({"approved": answer.to_dict()})
    emit({"run": client.wait(run_id).to_dict()})


def check_webhook(secret: str) -> None:
    delivery = json.load(sys.stdin)
    try:
        payload = verify_webhook(secret, delivery["headers"], delivery["body"])
    except WebhookVerificationError as exc:
        emit({"rejected": str(exc)})
    else:
        emit({"verified": payload})


GHOST_CREW = {
    "name": "ghostly",
    "agents": [{"name": "researcher", "role": "Researcher", "goal": "Find facts",
                "backstory": "Curious.", "llm": "openai/gpt-4o-mini"}],
    "tasks": [{"name": "facts", "description": "Research tides", "expected_output": "Facts",
               "agent": "ghost"}],
}


def problem(client: Agentd) -> None:
    try:
        client.kickoff(GHOST_CREW, {})
    except ProblemError as exc:
        emit({"problem": {"kind": type(exc).__name__, **exc.to_dict(),
                          "errors": exc.to_dict().get("errors", [])}})
        return
    raise AgentdError("the kickoff of a crew with an unknown agent was accepted")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("follow").add_argument("run_id")
    commands.add_parser("kickoff-and-wait").add_argument("body_json")
    commands.add_parser("approve").add_argument("run_id")
    commands.add_parser("verify-webhook").add_argument("secret")
    commands.add_parser("problem")
    args = parser.parse_args(argv)

    try:
        if args.command == "verify-webhook":
            check_webhook(args.secret)
            return 0
        with Agentd(args.url, api_key=args.key) as client:
            if args.command == "follow":
                follow(client, args.run_id)
            elif args.command == "kickoff-and-wait":
                kickoff_and_wait(client, args.body_json)
            elif args.command == "approve":
                approve(client, args.run_id)
            else:
                problem(client)
    except (AgentdError, ValueError, KeyError) as exc:
        print(f"driver: {args.command} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
