// Retries on 429 and 503 (honouring Retry-After), idempotency keys, network errors, time limits.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Agentd,
  AgentdConnectionError,
  RateLimitedError,
  UnavailableError,
  VERSION,
} from "../dist/index.js";
import { HANG_UP, NO_ANSWER, jsonReply, problem, runDocument, withStub } from "./stub.mjs";

const CREW = { name: "research", agents: [], tasks: [] };
const FAST = { initialDelayMs: 10, maxDelayMs: 20 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const rateLimited = (retryAfter) =>
  jsonReply(429, problem(429, "quota", "over the quota"), { "retry-after": retryAfter });
const unavailable = (retryAfter) =>
  jsonReply(503, problem(503, "unavailable", "database away"), { "retry-after": retryAfter });

test("a kickoff honours Retry-After and keeps its idempotency key on every retry", async () => {
  const run = runDocument();
  await withStub([rateLimited("1"), unavailable("1"), jsonReply(202, run)], async (server) => {
    const answered = await new Agentd({ baseUrl: server.url }).kickoff(CREW, { topic: "tides" });
    assert.equal(answered.id, run.id);
    assert.equal(server.requests.length, 3);
    const keys = new Set(server.requests.map((r) => r.headers["idempotency-key"]));
    assert.equal(keys.size, 1);
    assert.match([...keys][0], UUID);
    for (let i = 1; i < server.requests.length; i++) {
      assert.ok(server.requests[i].at - server.requests[i - 1].at >= 950, "waited Retry-After: 1");
    }
    assert.deepEqual(server.requests[0].json(), { crew: CREW, inputs: { topic: "tides" } });
    assert.deepEqual(server.requests[2].json(), server.requests[0].json());
  });
});

test("a Retry-After given as an HTTP date is honoured", async () => {
  const at = new Date(Date.now() + 2000).toUTCString();
  await withStub([unavailable(at), jsonReply(200, runDocument())], async (server) => {
    await new Agentd({ baseUrl: server.url }).getRun("r1");
    assert.equal(server.requests.length, 2);
    assert.ok(server.requests[1].at - server.requests[0].at >= 900);
  });
});

test("a given idempotency key is sent; each call gets its own otherwise", async () => {
  await withStub([jsonReply(202, runDocument())], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url });
    await agentd.kickoff("research", undefined, { idempotencyKey: "order-17", metadata: { ticket: "T-1" } });
    await agentd.kickoff("research");
    await agentd.kickoff("research");
    const keys = server.requests.map((r) => r.headers["idempotency-key"]);
    assert.equal(keys[0], "order-17");
    assert.equal(new Set(keys).size, 3);
    assert.deepEqual(server.requests[0].json(), { crew: "research", metadata: { ticket: "T-1" } });
  });
});

test("attempts are bounded and the last answer is thrown", async () => {
  await withStub([rateLimited("0")], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, retries: { maxAttempts: 3 } });
    const error = await agentd.getRun("r1").catch((e) => e);
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.status, 429);
    assert.equal(error.retryAfter, 0);
    assert.equal(server.requests.length, 3);
  });
});

test("a Retry-After over the cap is thrown at once", async () => {
  await withStub([unavailable("3600")], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, retries: { maxRetryAfterMs: 10_000 } });
    const error = await agentd.getRun("r1").catch((e) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(error.retryAfter, 3600);
    assert.equal(server.requests.length, 1);
  });
});

test("a 503 without Retry-After is retried with backoff; maxAttempts 1 turns retries off", async () => {
  await withStub([jsonReply(503, problem(503, "unavailable", "x")), jsonReply(200, runDocument())], async (server) => {
    await new Agentd({ baseUrl: server.url, retries: FAST }).getRun("r1");
    assert.equal(server.requests.length, 2);
  });
  await withStub([unavailable("0")], async (server) => {
    await assert.rejects(new Agentd({ baseUrl: server.url, retries: { maxAttempts: 1 } }).getRun("r1"), UnavailableError);
    assert.equal(server.requests.length, 1);
  });
});

test("network errors are retried for GETs and for kickoffs, with the same key", async () => {
  await withStub([HANG_UP, jsonReply(200, runDocument())], async (server) => {
    await new Agentd({ baseUrl: server.url, retries: FAST }).getRun("r1");
    assert.equal(server.requests.length, 2);
  });
  await withStub([HANG_UP, HANG_UP, jsonReply(202, runDocument())], async (server) => {
    await new Agentd({ baseUrl: server.url, retries: FAST }).kickoff("research");
    assert.equal(server.requests.length, 3);
    assert.equal(new Set(server.requests.map((r) => r.headers["idempotency-key"])).size, 1);
  });
});

test("network errors are not retried for a POST without a key", async () => {
  await withStub([HANG_UP, jsonReply(202, runDocument())], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, retries: FAST, apiKey: "agd_hidden" });
    const error = await agentd.cancel("r1").catch((e) => e);
    assert.ok(error instanceof AgentdConnectionError, String(error));
    assert.match(error.message, /^POST \/v1\/runs\/\{id\}\/cancel: /);
    assert.ok(!error.message.includes("agd_hidden"));
    assert.equal(server.requests.length, 1);
  });
});

test("an attempt without a whole answer in time is retried, then thrown", async () => {
  const stalled = { status: 200, headers: { "content-type": "application/json" }, pieces: ['{"id":'], pause: 3000 };
  await withStub([NO_ANSWER, stalled, jsonReply(200, runDocument())], async (server) => {
    await new Agentd({ baseUrl: server.url, retries: FAST, timeoutMs: 200 }).getRun("r1");
    assert.equal(server.requests.length, 3);
  });
  await withStub([NO_ANSWER], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, retries: { ...FAST, maxAttempts: 2 }, timeoutMs: 100 });
    await assert.rejects(agentd.getRun("r1"), (e) => e instanceof AgentdConnectionError && /TimeoutError/.test(e.message));
    assert.equal(server.requests.length, 2);
  });
});

test("a server out of reach is an AgentdConnectionError after the retries", async () => {
  const agentd = new Agentd({ baseUrl: "http://127.0.0.1:9", retries: { ...FAST, maxAttempts: 2 } });
  await assert.rejects(agentd.getRun("r1"), AgentdConnectionError);
});

test("the generated layer shares the retries and the key", async () => {
  const run = runDocument();
  await withStub([unavailable("0"), jsonReply(200, run)], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, apiKey: "agd_secret" });
    const { data } = await agentd.api.GET("/v1/runs/{id}", { params: { path: { id: run.id } } });
    assert.equal(data.id, run.id);
    assert.deepEqual(
      server.requests.map((r) => r.headers["authorization"]),
      ["Bearer agd_secret", "Bearer agd_secret"],
    );
    assert.equal(server.requests[0].headers["user-agent"], `agentd-client-typescript/${VERSION}`);
    assert.match(VERSION, /^\d+\.\d+\.\d+(-dev)?$/);
  });
});

test("retries are reported without the key or the query", async () => {
  await withStub([unavailable("0"), jsonReply(200, runDocument("completed"))], async (server) => {
    const seen = [];
    const agentd = new Agentd({ baseUrl: server.url, apiKey: "agd_topsecret", onRetry: (info) => seen.push(info) });
    await agentd.wait("r1");
    assert.deepEqual(seen, [{ method: "GET", path: "/v1/runs/r1/wait", attempt: 1, delayMs: 0, reason: "503" }]);
    assert.ok(!JSON.stringify(seen).includes("agd_topsecret"));
  });
});

test("an abort signal stops the waits between attempts", async () => {
  await withStub([rateLimited("30")], async (server) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop")), 100);
    const started = Date.now();
    await assert.rejects(new Agentd({ baseUrl: server.url }).getRun("r1", { signal: controller.signal }), /stop/);
    assert.ok(Date.now() - started < 5000);
  });
});
