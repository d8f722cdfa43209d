// The driver script's protocol (test/driver.mjs, run by agentd's Rust end-to-end tests), against
// the stub server: no agentd needed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { Webhook } from "standardwebhooks";

import { jsonReply, problem, sseEvent, sseReply, withStub } from "./stub.mjs";

const DRIVER = fileURLToPath(new URL("./driver.mjs", import.meta.url));
const TYPES = ["run.queued", "run.started", "run.completed"];

/** Runs the driver: its exit code, the JSON lines it printed, its stderr. */
function drive(args, stdin = "") {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [DRIVER, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      const lines = stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
      resolve({ code: error ? (error.code ?? 1) : 0, lines, stderr });
    });
    child.stdin.end(stdin);
  });
}

test("verify-webhook prints the payload or why it was rejected", async () => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const body = JSON.stringify({ seq: 1, type: "run.completed" });
  const now = new Date();
  const headers = {
    "webhook-id": "msg_9",
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign("msg_9", now, body),
  };
  const url = ["--url", "http://127.0.0.1:9"];
  let result = await drive([...url, "verify-webhook", secret], JSON.stringify({ headers, body }));
  assert.deepEqual([result.code, result.lines], [0, [{ verified: { seq: 1, type: "run.completed" } }]]);
  result = await drive([...url, "verify-webhook", secret], JSON.stringify({ headers, body: `${body} ` }));
  assert.equal(result.code, 0);
  assert.deepEqual(result.lines, [{ rejected: "no matching signature" }]);
});

test("follow prints events, resumptions and the end", async () => {
  await withStub(
    (request) => {
      const after = Number(request.headers["last-event-id"] ?? "0");
      const upto = after === 0 ? 2 : 3;
      const events = [];
      for (let seq = after + 1; seq <= upto; seq++) events.push(sseEvent(seq, TYPES[seq - 1]));
      return sseReply(["retry: 10\n\n", ...events]);
    },
    async (server) => {
      const { code, lines, stderr } = await drive(["--url", server.url, "--key", "agd_k", "follow", "r1"]);
      assert.equal(code, 0, stderr);
      assert.deepEqual(
        lines.map((line) => Object.keys(line)[0]),
        ["event", "event", "resumed", "event", "done"],
      );
      assert.deepEqual(
        lines.filter((line) => "event" in line).map((line) => line.event.seq),
        [1, 2, 3],
      );
      assert.deepEqual(lines[0].event, JSON.parse(sseEvent(1, TYPES[0]).split("data: ")[1]));
      assert.deepEqual(lines[2], { resumed: { last_event_id: "2" } });
      assert.deepEqual(lines.at(-1), { done: "run.completed" });
      assert.equal(server.requests[0].headers["authorization"], "Bearer agd_k");
    },
  );
});

test("problem prints the typed error", async () => {
  const document = problem(422, "validation", "crew.tasks[0].agent: unknown agent 'ghost'", {
    errors: [{ field: "crew.tasks[0].agent", message: "unknown agent 'ghost'" }],
  });
  await withStub([jsonReply(422, document)], async (server) => {
    const { code, lines } = await drive(["--url", server.url, "problem"]);
    assert.equal(code, 0);
    assert.deepEqual(lines, [{ problem: { kind: "ValidationError", ...document } }]);
    assert.deepEqual(Object.keys(lines[0].problem), ["kind", "type", "title", "status", "detail", "errors"]);
    assert.equal(server.requests[0].json().crew.tasks[0].agent, "ghost");
  });
});

test("kickoff-and-wait prints the key, then the run", async () => {
  const run = { id: "r9", status: "completed", output: { raw: "done" } };
  await withStub([jsonReply(202, { ...run, status: "queued" }), jsonReply(200, run)], async (server) => {
    const body = JSON.stringify({ crew: "research", inputs: { topic: "tides" }, metadata: { a: 1 } });
    const { code, lines, stderr } = await drive(["--url", server.url, "kickoff-and-wait", body]);
    assert.equal(code, 0, stderr);
    assert.deepEqual(lines, [
      { kicked: { id: "r9", idempotency_key: server.requests[0].headers["idempotency-key"] } },
      { run },
    ]);
    assert.deepEqual(server.requests[0].json(), { crew: "research", inputs: { topic: "tides" }, metadata: { a: 1 } });
  });
});

test("a failure exits non-zero with a message", async () => {
  await withStub([jsonReply(404, problem(404, "not-found", "no run r1"))], async (server) => {
    const { code, lines, stderr } = await drive(["--url", server.url, "follow", "r1"]);
    assert.notEqual(code, 0);
    assert.deepEqual(lines, []);
    assert.match(stderr, /NotFoundError/);
  });
  const usage = await drive(["follow"]);
  assert.notEqual(usage.code, 0);
  assert.match(usage.stderr, /usage:/);
});
