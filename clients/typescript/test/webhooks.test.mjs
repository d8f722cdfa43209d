// Webhook verification, cross-checked against the standardwebhooks package: signed with it,
// verified with ours (and the other way round).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";

import { Webhook } from "standardwebhooks";

import { WebhookVerificationError, verifyWebhook } from "../dist/index.js";

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const BODY = JSON.stringify({ seq: 7, run_id: "r1", type: "run.completed", at: "2026-01-02T03:04:05Z", data: {} });

function delivery({ secret = SECRET, body = BODY, at = new Date(), id = "msg_1" } = {}) {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(id, at, body),
  };
}

function rejected(why, ...args) {
  assert.throws(
    () => verifyWebhook(...args),
    (error) => error instanceof WebhookVerificationError && error.name === "WebhookVerificationError" && why.test(error.message),
  );
}

test("a delivery signed by standardwebhooks is verified and its payload answered", () => {
  const headers = delivery();
  assert.deepEqual(verifyWebhook(SECRET, headers, BODY), JSON.parse(BODY));
  // Any header case, a Headers object, a Buffer body.
  const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.deepEqual(verifyWebhook(SECRET, upper, Buffer.from(BODY)), JSON.parse(BODY));
  assert.deepEqual(verifyWebhook(SECRET, new Headers(headers), new TextEncoder().encode(BODY)), JSON.parse(BODY));
  // And standardwebhooks agrees.
  assert.deepEqual(new Webhook(SECRET).verify(BODY, headers), JSON.parse(BODY));
});

test("a body of non-ASCII text is signed over its UTF-8 bytes", () => {
  const body = JSON.stringify({ seq: 1, type: "agent.final_answer", data: { output: "marée — 潮" } });
  assert.equal(verifyWebhook(SECRET, delivery({ body }), body).data.output, "marée — 潮");
});

test("a tampered body is rejected", () => {
  rejected(/no matching signature/, SECRET, delivery(), BODY.replace("run.completed", "run.failed"));
  rejected(/no matching signature/, SECRET, delivery(), `${BODY} `);
});

test("another secret is rejected", () => {
  rejected(/no matching signature/, `whsec_${randomBytes(32).toString("base64")}`, delivery(), BODY);
});

test("a stale or future timestamp is rejected, within the tolerance accepted", () => {
  const now = Date.now();
  rejected(/too old/, SECRET, delivery({ at: new Date(now - 301_000) }), BODY);
  rejected(/in the future/, SECRET, delivery({ at: new Date(now + 301_000) }), BODY);
  assert.ok(verifyWebhook(SECRET, delivery({ at: new Date(now - 290_000) }), BODY));
  rejected(/too old/, SECRET, delivery({ at: new Date(now - 20_000) }), BODY, { toleranceSeconds: 10 });
  const at = new Date("2026-01-02T03:04:05Z");
  assert.ok(verifyWebhook(SECRET, delivery({ at }), BODY, { now: at.getTime() + 1000 }));
});

test("a changed webhook-id or timestamp breaks the signature", () => {
  rejected(/no matching signature/, SECRET, { ...delivery(), "webhook-id": "msg_2" }, BODY);
  const headers = delivery();
  const shifted = String(Number(headers["webhook-timestamp"]) - 1);
  rejected(/no matching signature/, SECRET, { ...headers, "webhook-timestamp": shifted }, BODY);
});

test("any of several signatures may match (a secret's rotation)", () => {
  const old = `whsec_${randomBytes(32).toString("base64")}`;
  const at = new Date();
  const headers = delivery({ at });
  const both = `${new Webhook(old).sign("msg_1", at, BODY)} ${headers["webhook-signature"]}`;
  assert.ok(verifyWebhook(SECRET, { ...headers, "webhook-signature": both }, BODY));
  assert.ok(verifyWebhook(old, { ...headers, "webhook-signature": both }, BODY));
  const v2 = headers["webhook-signature"].replace(/^v1,/, "v2,");
  rejected(/no matching signature/, SECRET, { ...headers, "webhook-signature": v2 }, BODY);
});

test("missing headers and malformed values are rejected", () => {
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const headers = delivery();
    delete headers[name];
    rejected(new RegExp(`missing header ${name}`), SECRET, headers, BODY);
  }
  rejected(/not an integer/, SECRET, { ...delivery(), "webhook-timestamp": "soon" }, BODY);
});

test("a body that is not JSON is rejected after its signature checks", () => {
  rejected(/not JSON/, SECRET, delivery({ body: "not json" }), "not json");
});

test("a secret that is not whsec_<base64> is a TypeError", () => {
  assert.throws(() => verifyWebhook("whsec_not base64!", delivery(), BODY), TypeError);
});
