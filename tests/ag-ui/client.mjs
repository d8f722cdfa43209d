#!/usr/bin/env node
// The AG-UI test client the end-to-end tests spawn against agentd's AG-UI endpoint. It runs one
// run through the official client, @ag-ui/client (pinned in package-lock.json; install with
// tests/ag-ui/setup.sh): HttpAgent.runAgent, with the library's own pipeline left as shipped —
// schema enforcement of every event (zod), chunk expansion, and the sequence verifier
// (verifyEvents) — so a stream this client accepts is one the official client accepts.
//
//   node tests/ag-ui/client.mjs --url URL [--key KEY] --input RUN_AGENT_INPUT_JSON
//                               [--input-file PATH] [--timeout-ms MS]
//
// The input is a RunAgentInput object. threadId, runId, messages, state, tools, context,
// forwardedProps, resume, parentRunId and protocolVersion are sent as given; absent ones get the
// library's defaults (a fresh uuid for threadId/runId, [] for messages/tools/context, {} for
// state/forwardedProps, protocolVersion "1.0"; resume and parentRunId are then left out). The
// request is the library's own: POST, Content-Type: application/json, Accept: text/event-stream,
// plus Authorization: Bearer KEY when --key is given.
//
// Output, one JSON object per line on stdout, each written as soon as it is known:
//   {"event": {...}}            every event as it came off the wire, before the library judged it
//                               (so the offending event is the last one printed before a
//                               verify_error); only the library's always-on pre-1.0 normalisation
//                               (legacy nulls dropped, THINKING_* renamed) has run, and it warns
//   {"warning": "..."}          the library warned (e.g. it stripped a field the schema does not
//                               describe, or dropped an event type it does not know)
//   then exactly one of:
//   {"done": true, "result", "pendingInterrupts", "state", "newMessages"}
//                               the run's stream ended and the library accepted all of it (a
//                               RUN_ERROR event is accepted too: check the last event); the other
//                               fields are what the library made of it (pendingInterrupts comes
//                               from an interrupt outcome)
//   {"verify_error": "...", "stage": "sequence"|"schema"}
//                               the library rejected the stream: "sequence" is verifyEvents (e.g.
//                               TEXT_MESSAGE_CONTENT before TEXT_MESSAGE_START, an event after
//                               RUN_FINISHED), "schema" is an event failing its zod schema
//   {"http_error": STATUS, "body": "..."}   the server answered non-2xx (body verbatim)
//   {"error": "..."}            anything else (connection refused, malformed SSE/JSON, timeout,
//                               an input the library refuses to send)
// The exit status is 0 for all of those; 2 only for a usage error.
import { readFileSync } from "node:fs";
import { HttpAgent, AGUIError } from "@ag-ui/client";
import { tap } from "rxjs";

function usage(message) {
  process.stderr.write(
    `client.mjs: ${message}\nusage: node tests/ag-ui/client.mjs --url URL [--key KEY] ` +
      `(--input JSON | --input-file PATH) [--timeout-ms MS]\n`,
  );
  process.exit(2);
}

const args = {};
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (!["--url", "--key", "--input", "--input-file", "--timeout-ms"].includes(flag)) {
      usage(`unknown argument ${flag}`);
    }
    if (i + 1 >= argv.length) usage(`${flag} needs a value`);
    args[flag.slice(2)] = argv[++i];
  }
}
if (!args.url) usage("--url is required");
if (args.input === undefined && args["input-file"] === undefined) usage("--input is required");
const timeoutMs = args["timeout-ms"] === undefined ? 120000 : Number(args["timeout-ms"]);
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) usage("--timeout-ms must be a positive number");

// One line per object, written synchronously in order (stdout to a pipe or file is synchronous
// in Node on Linux, so nothing is lost or reordered when the process exits).
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
let finished = false;
function finish(obj) {
  if (finished) return;
  finished = true;
  process.stdout.write(JSON.stringify(obj) + "\n", () => process.exit(0));
}
const messageOf = (err) => (err instanceof Error ? err.message : String(err));

process.on("uncaughtException", (err) => finish({ error: `uncaught: ${messageOf(err)}` }));
process.on("unhandledRejection", (err) => finish({ error: `unhandled: ${messageOf(err)}` }));

// The library reports deviations it tolerated (stripped fields, dropped unknown events, ...)
// through console.warn; surface them on stdout so a test can insist there are none.
console.warn = (...parts) => {
  if (finished) return;
  emit({ warning: parts.map((p) => (typeof p === "string" ? p : safeJson(p))).join(" ") });
};
function safeJson(value) {
  try {
    return value instanceof Error ? value.message : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

let given;
try {
  const text = args.input !== undefined ? args.input : readFileSync(args["input-file"], "utf8");
  given = JSON.parse(text);
} catch (err) {
  usage(`the input is not JSON: ${messageOf(err)}`);
}
if (typeof given !== "object" || given === null || Array.isArray(given)) {
  usage("the input must be a JSON object (a RunAgentInput)");
}

// The HTTP exchange, observed through the library's documented `fetch` hook: whether the request
// left, and a refusal's status and verbatim body (the library's own error carries the body
// re-parsed).
let requestSent = false;
let refusal;
const observingFetch = async (url, init) => {
  requestSent = true;
  const response = await fetch(url, init);
  if (!response.ok) {
    refusal = { status: response.status, body: await response.clone().text() };
  }
  return response;
};

const agent = new HttpAgent({
  url: args.url,
  headers: args.key !== undefined ? { Authorization: `Bearer ${args.key}` } : {},
  fetch: observingFetch,
  ...(given.threadId !== undefined && { threadId: given.threadId }),
  initialMessages: given.messages ?? [],
  ...(given.state !== undefined && { initialState: given.state }),
});

// Outermost middleware: puts the input fields runAgent has no parameter for on the request, and
// prints every event as it arrives, before enforcement and verification see it.
agent.use((input, next) => {
  const sent = { ...input };
  if (given.parentRunId !== undefined) sent.parentRunId = given.parentRunId;
  if (given.protocolVersion !== undefined) sent.protocolVersion = given.protocolVersion;
  return next.run(sent).pipe(tap((event) => emit({ event })));
});

const timer = setTimeout(
  () => finish({ error: `timed out after ${timeoutMs} ms` }),
  timeoutMs,
);

try {
  const { result, newMessages } = await agent.runAgent({
    ...(given.runId !== undefined && { runId: given.runId }),
    tools: given.tools ?? [],
    context: given.context ?? [],
    ...(given.forwardedProps !== undefined && { forwardedProps: given.forwardedProps }),
    ...(given.resume !== undefined && { resume: given.resume }),
  });
  clearTimeout(timer);
  finish({
    done: true,
    result,
    pendingInterrupts: agent.pendingInterrupts,
    state: agent.state,
    newMessages,
  });
} catch (err) {
  clearTimeout(timer);
  const isSchemaError =
    err !== null && typeof err === "object" && (err.name === "ZodError" || Array.isArray(err.issues));
  if (refusal !== undefined) {
    finish({ http_error: refusal.status, body: refusal.body });
  } else if (err instanceof AGUIError) {
    finish({ verify_error: messageOf(err), stage: "sequence" });
  } else if (isSchemaError && requestSent) {
    finish({ verify_error: messageOf(err), stage: "schema" });
  } else if (isSchemaError) {
    finish({ error: `the library refused to send the input: ${messageOf(err)}` });
  } else {
    const cause = err?.cause ? ` (${messageOf(err.cause)})` : "";
    finish({ error: `${messageOf(err)}${cause}` });
  }
}
