// Against a real agentd started with --fake-llm: set AGENTD_URL (and AGENTD_API_KEY when it has
// keys) to run these; they are skipped otherwise.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import { Agentd, NotFoundError, ValidationError } from "../dist/index.js";

const URL_ = process.env.AGENTD_URL ?? "";
const KEY = process.env.AGENTD_API_KEY || undefined;
const skip = URL_ === "" ? "AGENTD_URL is not set: start `agentd serve --fake-llm` and set it to run these" : false;

function crew({ approval = false, agent = "researcher" } = {}) {
  const spec = {
    name: "research",
    agents: [
      {
        name: "researcher",
        role: "Senior researcher",
        goal: "Find facts about {topic}",
        backstory: "Curious and precise.",
        llm: "openai/gpt-4o-mini",
        tools: ["calculator"],
      },
    ],
    tasks: [{ name: "facts", description: "Research {topic}", expected_output: "Three bullets", agent }],
  };
  if (approval) spec.requires_approval = ["calculator"];
  return spec;
}

const client = () => new Agentd({ baseUrl: URL_, apiKey: KEY });

async function collect(iterable) {
  const seen = [];
  for await (const event of iterable) seen.push(event);
  return seen;
}

function driver(...args) {
  const script = fileURLToPath(new URL("./driver.mjs", import.meta.url));
  const command = [script, "--url", URL_, ...(KEY ? ["--key", KEY] : []), ...args];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, command, { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`driver ${args[0]} failed: ${stderr}`));
      else resolve(stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)));
    });
  });
}

describe("against a real agentd", { skip }, () => {
  test("kickoffAndWait completes", async () => {
    const agentd = client();
    const run = await agentd.kickoffAndWait(crew(), { topic: "tides" }, { timeoutMs: 120_000 });
    assert.equal(run.status, "completed");
    assert.equal(run.usage.tool_calls, 1);
    assert.equal((await agentd.getRun(run.id)).status, "completed");
    // The generated layer works through the same transport.
    const { data } = await agentd.api.GET("/v1/runs/{id}", { params: { path: { id: run.id } } });
    assert.equal(data?.id, run.id);
  });

  test("the same idempotency key answers the same run", async () => {
    const agentd = client();
    const idempotencyKey = `ts-${randomUUID()}`;
    const first = await agentd.kickoff(crew(), { topic: "tides" }, { idempotencyKey });
    const again = await agentd.kickoff(crew(), { topic: "tides" }, { idempotencyKey });
    assert.equal(again.id, first.id);
    await agentd.wait(first.id, { timeoutMs: 120_000 });
  });

  test("events are dense, end with run.completed, and resume exactly", async () => {
    const agentd = client();
    const run = await agentd.kickoff(crew(), { topic: "tides" });
    const events = await collect(agentd.events(run.id));
    assert.deepEqual(
      events.map((e) => e.seq),
      events.map((_, i) => i + 1),
    );
    assert.equal(events[0].type, "run.queued");
    assert.equal(events.at(-1).type, "run.completed");
    const types = new Set(events.map((e) => e.type));
    assert.ok(types.has("tool.started") && types.has("tool.finished"));
    const middle = Math.floor(events.length / 2);
    const rest = await collect(agentd.events(run.id, { lastEventId: middle }));
    assert.deepEqual(
      rest.map((e) => e.seq),
      events.slice(middle).map((e) => e.seq),
    );
    // After the last event there is nothing (204).
    assert.deepEqual(await collect(agentd.events(run.id, { lastEventId: events.length })), []);
  });

  test("a crew with an unknown agent is a ValidationError", async () => {
    const error = await client()
      .kickoff(crew({ agent: "ghost" }), { topic: "tides" })
      .catch((e) => e);
    assert.ok(error instanceof ValidationError, String(error));
    assert.equal(error.name, "ValidationError");
    assert.equal(error.status, 422);
    assert.equal(error.type, "/problems/validation");
    assert.ok(error.errors.some((e) => e.field === "crew.tasks[0].agent"));
  });

  test("an unknown run is NotFoundError", async () => {
    await assert.rejects(client().getRun(randomUUID()), NotFoundError);
  });

  test("a tool call awaits approval and runs once approved", async () => {
    const agentd = client();
    const run = await agentd.kickoff(crew({ approval: true }), { topic: "tides" });
    let requested;
    for await (const event of agentd.events(run.id)) {
      if (event.type === "tool.approval_requested") {
        requested = event;
        break;
      }
    }
    assert.equal(requested?.data.tool, "calculator");
    assert.equal((await agentd.wait(run.id, { timeoutMs: 60_000 })).status, "awaiting_input");
    await agentd.approveToolCall(run.id, requested.data.tool_call_id); // holds '#' and '/'
    assert.equal((await agentd.wait(run.id, { timeoutMs: 120_000 })).status, "completed");
    const types = (await collect(agentd.events(run.id))).map((e) => e.type);
    assert.ok(types.includes("tool.approved"));
    assert.equal(types.at(-1), "run.completed");
  });

  test("a rejected tool call does not run", async () => {
    const agentd = client();
    const run = await agentd.kickoff(crew({ approval: true }), { topic: "tides" });
    assert.equal((await agentd.wait(run.id, { timeoutMs: 60_000 })).status, "awaiting_input");
    const { data } = await agentd.api.GET("/v1/runs/{id}/tool-calls", { params: { path: { id: run.id } } });
    const call = data?.tool_calls[0];
    assert.ok(call);
    await agentd.rejectToolCall(run.id, call.id, { reason: "not now" });
    const types = (await collect(agentd.events(run.id))).map((e) => e.type);
    assert.ok(types.includes("tool.rejected"));
    assert.ok(!types.includes("tool.approved"));
  });

  test("cancel a run awaiting approval", async () => {
    const agentd = client();
    const run = await agentd.kickoff(crew({ approval: true }), { topic: "tides" });
    await agentd.wait(run.id, { timeoutMs: 60_000 });
    await agentd.cancel(run.id);
    assert.equal((await agentd.wait(run.id, { timeoutMs: 60_000 })).status, "cancelled");
  });

  test("the driver against the server", async () => {
    const lines = await driver("kickoff-and-wait", JSON.stringify({ crew: crew(), inputs: { topic: "tides" } }));
    assert.deepEqual(Object.keys(lines[0]), ["kicked"]);
    assert.equal(lines[1].run.status, "completed");
    const runId = lines[0].kicked.id;
    const followed = await driver("follow", runId);
    assert.deepEqual(followed.at(-1), { done: "run.completed" });
    assert.deepEqual(
      followed.slice(0, -1).map((line) => line.event.seq),
      followed.slice(0, -1).map((_, i) => i + 1),
    );
    const [{ problem }] = await driver("problem");
    assert.equal(problem.kind, "ValidationError");
    assert.equal(problem.status, 422);
    assert.ok(problem.errors.some((e) => e.field === "crew.tasks[0].agent"));

    const gated = await driver("kickoff-and-wait", JSON.stringify({ crew: crew({ approval: true }), inputs: { topic: "tides" } }));
    const waiting = gated[1].run;
    assert.equal(waiting.status, "awaiting_input");
    const approved = await driver("approve", waiting.id);
    assert.deepEqual(
      approved.map((line) => Object.keys(line)[0]),
      ["approval_requested", "approved", "run"],
    );
    assert.equal(approved.at(-1).run.status, "completed");
  });
});
