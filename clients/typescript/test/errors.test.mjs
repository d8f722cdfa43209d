// Problem documents become typed errors; no error, message or serialisation holds the API key.
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { test } from "node:test";

import {
  Agentd,
  AgentdError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InternalServerError,
  MethodNotAllowedError,
  NotConfiguredError,
  NotFoundError,
  PayloadTooLargeError,
  ProblemError,
  RateLimitedError,
  RequestTimeoutError,
  UnauthorizedError,
  UnavailableError,
  UnsupportedMediaTypeError,
  UpstreamError,
  ValidationError,
  parseRetryAfter,
} from "../dist/index.js";
import { jsonReply, problem, withStub } from "./stub.mjs";

const NO_RETRY = { maxAttempts: 1 };

async function errorFor(reply, call = (agentd) => agentd.getRun("r1")) {
  return withStub([reply], async (server) => {
    const agentd = new Agentd({ baseUrl: server.url, apiKey: "agd_never_shown", retries: NO_RETRY });
    return call(agentd).then(
      () => assert.fail("the call succeeded"),
      (error) => error,
    );
  });
}

test("a validation problem is a ValidationError listing every field", async () => {
  const errors = [
    { field: "crew.tasks[0].agent", message: "unknown agent 'ghost'" },
    { field: "inputs.topic", message: "missing input 'topic'" },
  ];
  const error = await errorFor(
    jsonReply(422, problem(422, "validation", "2 fields are invalid", { errors })),
    (agentd) => agentd.kickoff("research", {}),
  );
  assert.ok(error instanceof ValidationError);
  assert.ok(error instanceof ProblemError && error instanceof AgentdError && error instanceof Error);
  assert.equal(error.name, "ValidationError");
  assert.equal(error.status, 422);
  assert.equal(error.type, "/problems/validation");
  assert.equal(error.slug, "validation");
  assert.equal(error.title, "Unprocessable Entity");
  assert.equal(error.detail, "2 fields are invalid");
  assert.deepEqual(error.errors, errors);
  assert.equal(
    error.message,
    "422 Unprocessable Entity: 2 fields are invalid (crew.tasks[0].agent: unknown agent 'ghost'; inputs.topic: missing input 'topic')",
  );
  assert.deepEqual(error.toProblem(), problem(422, "validation", "2 fields are invalid", { errors }));
});

test("every slug has its class, whatever the status", async () => {
  const classes = {
    "bad-request": BadRequestError,
    unauthorized: UnauthorizedError,
    forbidden: ForbiddenError,
    "not-found": NotFoundError,
    "method-not-allowed": MethodNotAllowedError,
    "request-timeout": RequestTimeoutError,
    conflict: ConflictError,
    "payload-too-large": PayloadTooLargeError,
    "unsupported-media-type": UnsupportedMediaTypeError,
    validation: ValidationError,
    quota: RateLimitedError,
    internal: InternalServerError,
    "not-configured": NotConfiguredError,
    upstream: UpstreamError,
    unavailable: UnavailableError,
  };
  for (const [slug, ErrorClass] of Object.entries(classes)) {
    const error = await errorFor(jsonReply(418, problem(418, slug, "x")));
    assert.ok(error instanceof ErrorClass, `${slug}: ${error.name}`);
    assert.equal(error.name, ErrorClass.name);
  }
});

test("an unknown type falls back on the status; an unknown status on ProblemError", async () => {
  const conflict = await errorFor(jsonReply(409, problem(409, "brand-new", "x")));
  assert.ok(conflict instanceof ConflictError);
  assert.equal(conflict.type, "/problems/brand-new");
  const teapot = await errorFor(jsonReply(418, { type: "about:blank", title: "I'm a teapot", status: 418, detail: "" }));
  assert.equal(teapot.constructor, ProblemError);
  assert.equal(teapot.name, "ProblemError");
});

test("a body that is no problem document still gives the status's error", async () => {
  const error = await errorFor({ status: 502, headers: { "content-type": "text/html" }, body: "<h1>Bad gateway</h1>" });
  assert.ok(error instanceof UpstreamError);
  assert.equal(error.type, "about:blank");
  assert.equal(error.detail, "<h1>Bad gateway</h1>");
  assert.deepEqual(error.errors, []);
  const empty = await errorFor({ status: 404 });
  assert.ok(empty instanceof NotFoundError);
  assert.equal(empty.detail, "");
});

test("Retry-After is kept on the error", async () => {
  const error = await errorFor(jsonReply(429, problem(429, "quota", "daily quota"), { "retry-after": "86400" }));
  assert.ok(error instanceof RateLimitedError);
  assert.equal(error.retryAfter, 86400);
  assert.equal(error.toJSON().retryAfter, 86400);
});

test("parseRetryAfter reads seconds and HTTP dates", () => {
  const now = Date.parse("2026-01-02T03:04:05Z");
  assert.equal(parseRetryAfter("2", now), 2);
  assert.equal(parseRetryAfter(" 0 ", now), 0);
  assert.equal(parseRetryAfter("Fri, 02 Jan 2026 03:04:15 GMT", now), 10);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("-1", now), undefined);
  assert.equal(parseRetryAfter("soon", now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});

test("the API key appears in no error, message, serialisation or inspection", async () => {
  const error = await errorFor(jsonReply(401, problem(401, "unauthorized", "no valid key")));
  assert.ok(error instanceof UnauthorizedError);
  const agentd = new Agentd({ baseUrl: "http://127.0.0.1:9", apiKey: "agd_never_shown", retries: NO_RETRY });
  const unreachable = await agentd.getRun("r1").catch((e) => e);
  for (const text of [
    error.message,
    error.stack,
    JSON.stringify(error),
    inspect(error, { depth: 10, showHidden: true }),
    unreachable.message,
    JSON.stringify(unreachable),
    inspect(unreachable, { depth: 10, showHidden: true }),
    JSON.stringify(agentd),
    inspect(agentd, { depth: 10, showHidden: true }),
    String(agentd),
  ]) {
    assert.ok(!String(text).includes("agd_never_shown"), text);
  }
  assert.deepEqual(JSON.parse(JSON.stringify(error)), {
    name: "UnauthorizedError",
    ...problem(401, "unauthorized", "no valid key"),
  });
});
