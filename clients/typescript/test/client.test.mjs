// The client's methods against the stub: what they send, what they answer.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Agentd, VERSION, WaitTimeoutError } from "../dist/index.js";
import { jsonReply, runDocument, withStub } from "./stub.mjs";

const RUN_ID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

test("the version is the package's and the server's", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const cargo = readFileSync(new URL("../../../Cargo.toml", import.meta.url), "utf8");
  const server = /^\[package\][^[]*?^version\s*=\s*"([^"]+)"/ms.exec(cargo)?.[1];
  assert.match(pkg.version, /^\d+\.\d+\.\d+(-dev)?$/);
  assert.equal(VERSION, pkg.version);
  assert.equal(server, pkg.version);
});

test("the constructor checks its options", () => {
  assert.throws(() => new Agentd({ baseUrl: "127.0.0.1:8080" }), TypeError);
  assert.throws(() => new Agentd({ baseUrl: "http://x", retries: { maxAttempts: 0 } }), RangeError);
  assert.throws(() => new Agentd({ baseUrl: "http://x", reconnect: { maxAttempts: -1 } }), RangeError);
  assert.equal(new Agentd({ baseUrl: "http://x:1//" }).baseUrl, "http://x:1");
});

test("kickoff sends crew, inputs and the other members", async () => {
  const run = runDocument();
  await withStub([jsonReply(202, run)], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url });
    const answered = await agentd.kickoff({ name: "c", agents: [], tasks: [] }, { topic: "tides" }, { timeout_s: 60, stream: true });
    assert.deepEqual(answered, run);
    const [request] = server.requests;
    assert.equal(request.method, "POST");
    assert.equal(request.path, "/v1/kickoffs");
    assert.equal(request.headers["content-type"], "application/json");
    assert.deepEqual(request.json(), {
      crew: { name: "c", agents: [], tasks: [] },
      inputs: { topic: "tides" },
      timeout_s: 60,
      stream: true,
    });
  });
});

test("kickoffBatch sends every input set with one key and answers the runs", async () => {
  const runs = [runDocument(), runDocument()];
  await withStub([jsonReply(202, { runs })], async (server) => {
    const answered = await new Agentd({ baseUrl: server.url }).kickoffBatch("research", [{ topic: "a" }, { topic: "b" }], {
      idempotencyKey: "batch-1",
    });
    assert.deepEqual(answered, runs);
    assert.equal(server.requests[0].path, "/v1/kickoffs/batch");
    assert.equal(server.requests[0].headers["idempotency-key"], "batch-1");
    assert.deepEqual(server.requests[0].json(), { crew: "research", inputs: [{ topic: "a" }, { topic: "b" }] });
  });
});

test("wait long-polls until the run has ended or awaits input", async () => {
  const script = [
    jsonReply(200, runDocument("running", RUN_ID)),
    jsonReply(200, runDocument("awaiting_input", RUN_ID)),
  ];
  await withStub(script, async (server) => {
    const run = await new Agentd({ baseUrl: server.url }).wait(RUN_ID);
    assert.equal(run.status, "awaiting_input");
    assert.deepEqual(
      server.requests.map((r) => `${r.path}?${r.query}`),
      [`/v1/runs/${RUN_ID}/wait?timeout_s=120`, `/v1/runs/${RUN_ID}/wait?timeout_s=120`],
    );
  });
});

test("wait gives up when its time is up, with the run as it stood", async () => {
  await withStub([jsonReply(200, runDocument("running", RUN_ID))], async (server) => {
    const error = await new Agentd({ baseUrl: server.url }).wait(RUN_ID, { timeoutMs: 1500 }).catch((e) => e);
    assert.ok(error instanceof WaitTimeoutError, String(error));
    assert.equal(error.run.status, "running");
    assert.equal(error.runId, RUN_ID);
    // The stub answers at once: the client polls again and again with what is left.
    assert.equal(server.requests[0].query.get("timeout_s"), "2");
    assert.ok(["0", "1"].includes(server.requests.at(-1).query.get("timeout_s")));
  });
});

test("kickoffAndWait tells the run and its key, then waits", async () => {
  const script = [
    jsonReply(202, runDocument("queued", RUN_ID)),
    jsonReply(200, runDocument("completed", RUN_ID)),
  ];
  await withStub(script, async (server) => {
    const kicked = [];
    const run = await new Agentd({ baseUrl: server.url }).kickoffAndWait("research", { topic: "tides" }, {
      onKickoff: (started, key) => kicked.push([started.id, key]),
      metadata: { ticket: "T-1" },
    });
    assert.equal(run.status, "completed");
    assert.deepEqual(kicked, [[RUN_ID, server.requests[0].headers["idempotency-key"]]]);
    assert.deepEqual(server.requests[0].json(), { crew: "research", inputs: { topic: "tides" }, metadata: { ticket: "T-1" } });
    assert.equal(server.requests[1].path, `/v1/runs/${RUN_ID}/wait`);
    assert.equal(server.requests[1].query.get("timeout_s"), "120");
  });
});

test("approve and reject percent-encode the tool call's id", async () => {
  await withStub([jsonReply(200, runDocument("queued", RUN_ID))], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url });
    await agentd.approveToolCall(RUN_ID, "answer#1/call_1");
    await agentd.approveToolCall(RUN_ID, "answer#1/call_2", { arguments: { expression: "6*7" }, reason: "checked" });
    await agentd.rejectToolCall(RUN_ID, "answer#1/call_3", { reason: "not that" });
    await agentd.rejectToolCall(RUN_ID, "answer#1/call_4");
    assert.deepEqual(
      server.requests.map((r) => [r.method, r.rawPath, r.json()]),
      [
        ["POST", `/v1/runs/${RUN_ID}/tool-calls/answer%231%2Fcall_1/approval`, { approve: true }],
        [
          "POST",
          `/v1/runs/${RUN_ID}/tool-calls/answer%231%2Fcall_2/approval`,
          { approve: true, arguments: { expression: "6*7" }, reason: "checked" },
        ],
        ["POST", `/v1/runs/${RUN_ID}/tool-calls/answer%231%2Fcall_3/approval`, { approve: false, reason: "not that" }],
        ["POST", `/v1/runs/${RUN_ID}/tool-calls/answer%231%2Fcall_4/approval`, { approve: false }],
      ],
    );
  });
});

test("getRun and cancel", async () => {
  await withStub([jsonReply(200, runDocument("running", RUN_ID)), jsonReply(200, runDocument("cancelling", RUN_ID))], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, headers: { "x-trace": "t1" } });
    assert.equal((await agentd.getRun(RUN_ID)).status, "running");
    assert.equal((await agentd.cancel(RUN_ID)).status, "cancelling");
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.path} ${r.headers["x-trace"]}`),
      [`GET /v1/runs/${RUN_ID} t1`, `POST /v1/runs/${RUN_ID}/cancel t1`],
    );
    assert.equal(server.requests[0].headers["authorization"], undefined);
  });
});

test("a custom fetch is used for every request", async () => {
  const seen = [];
  const agentd = new Agentd({
    baseUrl: "http://agentd.invalid",
    apiKey: "agd_k",
    fetch: async (request) => {
      seen.push([request.method, request.url, request.headers.get("authorization")]);
      return new Response(JSON.stringify(runDocument("completed", RUN_ID)), {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    },
  });
  await agentd.getRun(RUN_ID);
  assert.deepEqual(seen, [["GET", `http://agentd.invalid/v1/runs/${RUN_ID}`, "Bearer agd_k"]]);
});
