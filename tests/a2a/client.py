#!/usr/bin/env python3
"""A2A 1.0 test client on the official A2A SDK (PyPI `a2a-sdk`, pinned in requirements.txt).

The Rust e2e tests spawn it with target/a2a-venv/bin/python (tests/a2a/setup.sh installs it):

    client.py --card-url URL [--key KEY] [--auth-from-card] [--binding jsonrpc|rest]
              [--timeout SECONDS] COMMAND ...

--card-url is the full URL of an agent card. The card is resolved with the SDK's A2ACardResolver,
then ClientFactory picks the interface the card names (JSON-RPC by default) and every request,
the card fetch included, carries `Authorization: Bearer KEY` when --key is given. With
--auth-from-card the key is instead put on A2A calls only by the SDK's AuthInterceptor, i.e. only
if the card's securitySchemes/securityRequirements declare an HTTP bearer scheme.

Commands (each prints JSON lines on stdout, flushed one by one):
  card                                        {"card": CARD}
  extended-card                               {"card": CARD}  (GetExtendedAgentCard when the
                                              card's capabilities.extendedAgentCard is true)
  send TEXT [--data JSON]... [--context-id C] [--task-id T] [--return-immediately]
       [--history-length N] [--push-url URL [--push-token T]]
                                              SendMessage (blocking): {"task": T} | {"message": M}
  stream TEXT [same options]                  SendStreamingMessage: {"event": STREAM_RESPONSE}
                                              per item, then {"done": true}
  get TASK_ID [--history-length N]            {"task": T}
  list [--context-id C] [--status TASK_STATE_X] [--page-size N] [--page-token P]
       [--history-length N] [--include-artifacts]
                                              {"tasks": [...], "nextPageToken", "pageSize",
                                               "totalSize"}
  cancel TASK_ID                              {"task": T}
  subscribe TASK_ID                           SubscribeToTask: like stream
  push-set TASK_ID URL [--token T] [--config-id ID] [--auth-scheme S] [--auth-credentials C]
                                              {"config": CONFIG}
  push-get TASK_ID CONFIG_ID                  {"config": CONFIG}
  push-list TASK_ID                           {"configs": [...], "nextPageToken": ...}
  push-delete TASK_ID CONFIG_ID               {"deleted": true}

JSON shapes are the A2A 1.0 ProtoJSON the SDK parsed (camelCase keys, enums by name, e.g.
"TASK_STATE_COMPLETED", "ROLE_AGENT"), re-serialized with google.protobuf.json_format.

Failures are JSON lines too, with exit status 0:
  {"error": {"code": INT, "message": STR[, "data": {...}]}}   A2A / JSON-RPC error from the server
  {"http_error": STATUS}                                      a non-2xx HTTP answer (401, 404...)
  {"client_error": {"type": STR, "message": STR}}             anything else the SDK refused:
                                              a card or response it cannot parse, a network
                                              error, a timeout, no compatible interface.
A nonzero exit means the client itself crashed (or bad command-line usage).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import uuid

from urllib.parse import urlsplit

import httpx

from google.protobuf import json_format

from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    AgentCardResolutionError,
    AuthInterceptor,
    ClientConfig,
    ClientFactory,
    CredentialService,
)
from a2a.helpers import new_data_part, new_text_part
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError, MethodNotFoundError


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + '\n')
    sys.stdout.flush()


def to_json(msg) -> dict:
    return json_format.MessageToDict(msg)


class _KeyForEveryScheme(CredentialService):
    """Hands the --key to the SDK's AuthInterceptor for whatever scheme the card names."""

    def __init__(self, key: str) -> None:
        self._key = key

    async def get_credentials(self, security_scheme_name, context):  # noqa: ANN001
        return self._key


def error_line(exc: BaseException) -> dict:
    """Maps an exception raised by the SDK to one output line."""
    # An A2A / JSON-RPC error object in the answer: the SDK raises the A2AError mapped from its
    # code (TaskNotFoundError for -32001, ...), or A2AClientError('JSON-RPC Error CODE: MSG')
    # for a code it does not know. (The REST binding maps its error bodies to the same types,
    # except a bare 404, which it turns into MethodNotFoundError('Resource not found: URL').)
    code = JSON_RPC_ERROR_CODE_MAP.get(type(exc))
    bare_rest_404 = isinstance(exc, MethodNotFoundError) and str(exc).startswith(
        'Resource not found:'
    )
    if code is not None and not bare_rest_404:
        err = {'code': code, 'message': getattr(exc, 'message', str(exc))}
        if getattr(exc, 'data', None):
            err['data'] = exc.data
        return {'error': err}
    if isinstance(exc, A2AClientError):
        m = re.match(r'JSON-RPC Error (-?\d+): (.*)', str(exc), re.S)
        if m:
            return {'error': {'code': int(m.group(1)), 'message': m.group(2)}}
    # A non-2xx HTTP answer: the SDK wraps httpx.HTTPStatusError (card fetch, call or stream).
    if isinstance(exc, AgentCardResolutionError) and exc.status_code is not None:
        return {'http_error': exc.status_code}
    cause = exc
    while cause is not None:
        if isinstance(cause, httpx.HTTPStatusError):
            return {'http_error': cause.response.status_code}
        cause = cause.__cause__
    return {'client_error': {'type': type(exc).__name__, 'message': str(exc)}}


def build_message(args) -> Message:
    parts = [new_text_part(args.text)]
    for d in args.data or []:
        parts.append(new_data_part(json.loads(d)))
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=parts,
        context_id=args.context_id or '',
        task_id=args.task_id or '',
    )


def build_send_request(args) -> SendMessageRequest:
    config = SendMessageConfiguration(return_immediately=args.return_immediately)
    if args.history_length is not None:
        config.history_length = args.history_length
    if args.push_url:
        config.task_push_notification_config.url = args.push_url
        config.task_push_notification_config.token = args.push_token or ''
    return SendMessageRequest(message=build_message(args), configuration=config)


async def run(args) -> None:
    bearer = {'Authorization': f'Bearer {args.key}'} if args.key else {}
    # Without --auth-from-card the key is a default header of the one HTTP client the SDK uses for
    # everything; with it, only the card fetch gets it here and A2A calls get it (or not) from
    # the SDK's AuthInterceptor according to the card's security schemes.
    http = httpx.AsyncClient(
        headers={} if args.auth_from_card else bearer,
        timeout=httpx.Timeout(args.timeout, connect=10.0),
    )
    async with http:
        binding = {'jsonrpc': TransportProtocol.JSONRPC, 'rest': TransportProtocol.HTTP_JSON}[
            args.binding
        ]
        config = ClientConfig(
            streaming=args.command in ('stream', 'subscribe'),
            httpx_client=http,
            supported_protocol_bindings=[binding],
        )
        factory = ClientFactory(config)  # adds the `A2A-Version: 1.0` default header to `http`
        # The SDK's card resolver: base URL = scheme://host[:port], card path = the rest of
        # --card-url (the resolver GETs base + '/' + path).
        u = urlsplit(args.card_url)
        card_path = u.path + (f'?{u.query}' if u.query else '')
        resolver = A2ACardResolver(http, f'{u.scheme}://{u.netloc}', card_path or '/')
        card = await resolver.get_agent_card(http_kwargs={'headers': bearer} if bearer else None)
        if args.command == 'card':
            emit({'card': to_json(card)})
            return
        interceptors = (
            [AuthInterceptor(_KeyForEveryScheme(args.key))] if args.key and args.auth_from_card else []
        )
        client = factory.create(card, interceptors)
        try:
            await run_command(client, card, args)
        finally:
            await client.close()


async def run_command(client, card, args) -> None:  # noqa: ANN001, PLR0912
    cmd = args.command
    if cmd == 'extended-card':
        emit({'card': to_json(await client.get_extended_agent_card(GetExtendedAgentCardRequest()))})
    elif cmd == 'send':
        # ClientConfig(streaming=False): BaseClient.send_message makes one SendMessage call and
        # yields its task or message. returnImmediately=false (the default) makes the server
        # answer only once the task is terminal or interrupted (e.g. TASK_STATE_INPUT_REQUIRED).
        async for item in client.send_message(build_send_request(args)):
            if item.HasField('task'):
                emit({'task': to_json(item.task)})
            else:
                emit({'message': to_json(item.message)})
    elif cmd in ('stream', 'subscribe'):
        if not card.capabilities.streaming:
            print(
                'client.py: the card does not declare capabilities.streaming; '
                + ('the SDK falls back to SendMessage' if cmd == 'stream' else 'subscribing anyway'),
                file=sys.stderr,
            )
        if cmd == 'stream':
            items = client.send_message(build_send_request(args))
        else:
            items = client.subscribe(SubscribeToTaskRequest(id=args.task_id))
        async for item in items:
            emit({'event': to_json(item)})
        emit({'done': True})
    elif cmd == 'get':
        req = GetTaskRequest(id=args.task_id)
        if args.history_length is not None:
            req.history_length = args.history_length
        emit({'task': to_json(await client.get_task(req))})
    elif cmd == 'list':
        req = ListTasksRequest(context_id=args.context_id or '', page_token=args.page_token or '')
        if args.status:
            req.status = TaskState.Value(args.status)
        if args.page_size is not None:
            req.page_size = args.page_size
        if args.history_length is not None:
            req.history_length = args.history_length
        if args.include_artifacts:
            req.include_artifacts = True
        out = to_json(await client.list_tasks(req))
        for k, v in (('tasks', []), ('nextPageToken', ''), ('pageSize', 0), ('totalSize', 0)):
            out.setdefault(k, v)
        emit(out)
    elif cmd == 'cancel':
        emit({'task': to_json(await client.cancel_task(CancelTaskRequest(id=args.task_id)))})
    elif cmd == 'push-set':
        cfg = TaskPushNotificationConfig(
            task_id=args.task_id, url=args.url, token=args.token or '', id=args.config_id or ''
        )
        if args.auth_scheme:
            cfg.authentication.CopyFrom(
                AuthenticationInfo(scheme=args.auth_scheme, credentials=args.auth_credentials or '')
            )
        emit({'config': to_json(await client.create_task_push_notification_config(cfg))})
    elif cmd == 'push-get':
        req = GetTaskPushNotificationConfigRequest(task_id=args.task_id, id=args.config_id)
        emit({'config': to_json(await client.get_task_push_notification_config(req))})
    elif cmd == 'push-list':
        req = ListTaskPushNotificationConfigsRequest(task_id=args.task_id)
        out = to_json(await client.list_task_push_notification_configs(req))
        out.setdefault('configs', [])
        out.setdefault('nextPageToken', '')
        emit(out)
    elif cmd == 'push-delete':
        req = DeleteTaskPushNotificationConfigRequest(task_id=args.task_id, id=args.config_id)
        await client.delete_task_push_notification_config(req)
        emit({'deleted': True})
    else:  # pragma: no cover - argparse rejects unknown commands
        raise SystemExit(f'unknown command {cmd}')


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description='A2A 1.0 test client on the official a2a-sdk')
    p.add_argument('--card-url', required=True, help='full URL of the agent card')
    p.add_argument('--key', help='bearer key sent as Authorization: Bearer KEY')
    p.add_argument(
        '--auth-from-card',
        action='store_true',
        help="put the key on A2A calls only through the SDK's AuthInterceptor (card-driven)",
    )
    p.add_argument('--binding', choices=['jsonrpc', 'rest'], default='jsonrpc')
    p.add_argument('--timeout', type=float, default=300.0, help='HTTP timeout in seconds')
    sub = p.add_subparsers(dest='command', required=True)

    sub.add_parser('card')
    sub.add_parser('extended-card')
    for name in ('send', 'stream'):
        s = sub.add_parser(name)
        s.add_argument('text')
        s.add_argument('--data', action='append', help='a JSON value sent as a data part')
        s.add_argument('--context-id')
        s.add_argument('--task-id')
        s.add_argument('--return-immediately', action='store_true')
        s.add_argument('--history-length', type=int)
        s.add_argument('--push-url', help='configuration.taskPushNotificationConfig.url')
        s.add_argument('--push-token', help='configuration.taskPushNotificationConfig.token')
    s = sub.add_parser('get')
    s.add_argument('task_id')
    s.add_argument('--history-length', type=int)
    s = sub.add_parser('list')
    s.add_argument('--context-id')
    s.add_argument('--status', help='a TaskState name, e.g. TASK_STATE_COMPLETED')
    s.add_argument('--page-size', type=int)
    s.add_argument('--page-token')
    s.add_argument('--history-length', type=int)
    s.add_argument('--include-artifacts', action='store_true')
    for name in ('cancel', 'subscribe', 'push-list'):
        sub.add_parser(name).add_argument('task_id')
    s = sub.add_parser('push-set')
    s.add_argument('task_id')
    s.add_argument('url')
    s.add_argument('--token')
    s.add_argument('--config-id')
    s.add_argument('--auth-scheme')
    s.add_argument('--auth-credentials')
    for name in ('push-get', 'push-delete'):
        s = sub.add_parser(name)
        s.add_argument('task_id')
        s.add_argument('config_id')
    return p.parse_args(argv)


def main() -> None:
    args = parse_args(sys.argv[1:])
    try:
        asyncio.run(run(args))
    except (A2AError, json_format.ParseError, ValueError, httpx.HTTPError) as exc:
        # A2AError covers A2AClientError and the mapped JSON-RPC errors; ParseError is a
        # response the SDK could not parse as ProtoJSON; ValueError is e.g. "no compatible
        # transports found." or a response with neither task nor message.
        emit(error_line(exc))


if __name__ == '__main__':
    main()
