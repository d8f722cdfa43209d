#!/usr/bin/env node
// Drives the TypeScript client for agentd's end-to-end tests, which run it and read its stdout.
// It behaves as clients/python/tests/driver.py does.
//
//     node test/driver.mjs --url URL [--key KEY] COMMAND ARGS
//
// Prints one JSON object per line, as soon as it is known. Exits 0 on success; otherwise non-zero
// with a message on stderr.
//
// Commands:
//     follow RUN_ID              {"event": <envelope>} per event, {"resumed": {"last_event_id": ..}}
//                                at each resumption, then {"done": "<terminal event type>"}
//     kickoff-and-wait BODY      {"kicked": {"id", "idempotency_key"}}, then {"run": <final run>};
//                                BODY is '{"crew": ..., "inputs": ...}' (other members: the kickoff's)
//     approve RUN_ID             {"approval_requested": <data>}, {"approved": <answer>}, {"run": ..}
//     verify-webhook SECRET      reads {"headers": {..}, "body": "<raw body>"} from stdin; prints
//                                {"verified": <payload>} or {"rejected": "<why>"} (exit 0 both ways)
//     problem                    kicks off a crew whose task's agent is "ghost"; prints
//                                {"problem": {"kind", "type", "title", "status", "detail", "errors"}}

import { writeSync } from "node:fs";
import { parseArgs } from "node:util";

import {
  Agentd,
  AgentdError,
  ProblemError,
  WebhookVerificationError,
  isTerminalEvent,
  verifyWebhook,
} from "../dist/index.js";

const USAGE = "usage: driver.mjs --url URL [--key KEY] {follow RUN_ID | kickoff-and-wait BODY | approve RUN_ID | verify-webhook SECRET | problem}";

/** Prints one line of JSON, at once (a synchronous write: nothing is lost on exit). */
function emit(document) {
  writeSync(1, `${JSON.stringify(document)}\n`);
}

async function follow(client, runId) {
  const onReconnect = (lastEventId) => emit({ resumed: { last_event_id: lastEventId ?? null } });
  for await (const event of client.events(runId, { onReconnect })) {
    emit({ event });
    if (isTerminalEvent(event)) {
      emit({ done: event.type });
      return;
    }
  }
  throw new AgentdError(`the events of run ${runId} ended without a terminal event`);
}

async function kickoffAndWait(client, bodyJson) {
  const { crew, inputs, ...fields } = JSON.parse(bodyJson);
  if (crew === undefined) throw new AgentdError("BODY has no crew");
  const onKickoff = (run, idempotencyKey) => emit({ kicked: { id: run.id, idempotency_key: idempotencyKey } });
  const run = await client.kickoffAndWait(crew, inputs ?? undefined, { ...fields, onKickoff });
  emit({ run });
}

async function approve(client, runId) {
  let requested;
  for await (const event of client.events(runId)) {
    if (event.type === "tool.approval_requested") {
      requested = event;
      break;
    }
  }
  if (requested === undefined) throw new AgentdError(`run ${runId} ended without asking for an approval`);
  emit({ approval_requested: requested.data });
  const answer = await client.approveToolCall(runId, requested.data.tool_call_id);
  emit({ approved: answer });
  emit({ run: await client.wait(runId) });
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function checkWebhook(secret) {
  const delivery = JSON.parse(await readStdin());
  if (typeof delivery.body !== "string" || typeof delivery.headers !== "object" || delivery.headers === null) {
    throw new TypeError('stdin must be {"headers": {...}, "body": "<raw body>"}');
  }
  try {
    emit({ verified: verifyWebhook(secret, delivery.headers, delivery.body) });
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    emit({ rejected: error.message });
  }
}

export const GHOST_CREW = {
  name: "ghostly",
  agents: [
    { name: "researcher", role: "Researcher", goal: "Find facts", backstory: "Curious.", llm: "openai/gpt-4o-mini" },
  ],
  tasks: [{ name: "facts", description: "Research tides", expected_output: "Facts", agent: "ghost" }],
};

async function problem(client) {
  try {
    await client.kickoff(GHOST_CREW, {});
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    emit({ problem: { kind: error.name, ...error.toProblem(), errors: error.errors } });
    return;
  }
  throw new AgentdError("the kickoff of a crew with an unknown agent was accepted");
}

/** The command line: the options and the command with its one argument (none for `problem`). */
function parse(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { url: { type: "string" }, key: { type: "string" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const [command, argument, ...extra] = positionals;
  const arity = { follow: 1, "kickoff-and-wait": 1, approve: 1, "verify-webhook": 1, problem: 0 }[command];
  const given = argument === undefined ? 0 : 1 + extra.length;
  if (values.url === undefined || arity === undefined || given !== arity) {
    console.error(USAGE);
    process.exit(2);
  }
  return { url: values.url, key: values.key, command, argument };
}

async function main(argv) {
  let args;
  try {
    args = parse(argv);
  } catch (error) {
    console.error(`${USAGE}\ndriver: ${error.message}`);
    return 2;
  }
  try {
    if (args.command === "verify-webhook") {
      await checkWebhook(args.argument);
      return 0;
    }
    const client = new Agentd({ baseUrl: args.url, apiKey: args.key });
    if (args.command === "follow") await follow(client, args.argument);
    else if (args.command === "kickoff-and-wait") await kickoffAndWait(client, args.argument);
    else if (args.command === "approve") await approve(client, args.argument);
    else await problem(client);
  } catch (error) {
    const name = error instanceof Error ? error.name : typeof error;
    const message = error instanceof Error ? error.message : String(error);
    console.error(`driver: ${args.command} failed: ${name}: ${message}`);
    return 1;
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
