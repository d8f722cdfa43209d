/**
 * Verifying agentd's webhook deliveries, the Standard Webhooks way.
 *
 * A delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`:
 * space-separated `v1,<base64 HMAC-SHA256>` signatures of `<id>.<timestamp>.<body>` (two while an
 * endpoint's secret is being rotated). The key is the base64 after `whsec_` in the endpoint's
 * secret.
 */

import { createHmac, timingSafeEqual } from "node:crypto";

import { WebhookVerificationError } from "./errors.js";
import type { RunEvent } from "./types.js";

/** A delivery's headers: a `Headers`, or a plain object such as Node's `IncomingHttpHeaders` (any case). */
export type WebhookHeaders =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** How many seconds `webhook-timestamp` may be from now, either way (default 300). */
  readonly toleranceSeconds?: number;
  /** The current time, in milliseconds since the epoch (default `Date.now()`). */
  readonly now?: number;
}

const SECRET_PREFIX = "whsec_";
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Checks a webhook delivery and answers its payload: the event envelope, JSON-decoded.
 *
 * @param secret the endpoint's secret, `whsec_<base64>`
 * @param headers the request's headers
 * @param body the request's body exactly as received: the signature covers its bytes
 * @throws {WebhookVerificationError} a header is missing, the timestamp is out of tolerance, no
 *   signature matches, or the body is not JSON
 * @throws {TypeError} `secret` is not `whsec_<base64>`
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): RunEvent {
  const key = secretKey(secret);
  const msgId = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not an integer");
  const sentAt = Number(timestamp);
  const now = (options.now ?? Date.now()) / 1000;
  const tolerance = options.toleranceSeconds ?? 300;
  if (sentAt < now - tolerance) throw new WebhookVerificationError("webhook-timestamp is too old");
  if (sentAt > now + tolerance) throw new WebhookVerificationError("webhook-timestamp is in the future");

  const payload = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const expected = Buffer.from(
    createHmac("sha256", key).update(`${msgId}.${timestamp}.`).update(payload).digest("base64"),
    "utf8",
  );
  let matched = false;
  for (const signature of signatures.split(/\s+/)) {
    const comma = signature.indexOf(",");
    if (comma < 0 || signature.slice(0, comma) !== "v1") continue;
    const given = Buffer.from(signature.slice(comma + 1), "utf8");
    // Every signature is compared, so the time taken does not tell which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError("no matching signature");
  try {
    return JSON.parse(payload.toString("utf8")) as RunEvent;
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
}

function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded)) throw new TypeError("a webhook secret is whsec_ followed by base64");
  return Buffer.from(encoded, "base64");
}

function header(headers: WebhookHeaders, name: string): string {
  let value: string | readonly string[] | null | undefined;
  if (headers instanceof Headers) {
    value = headers.get(name);
  } else {
    const found = Object.keys(headers).find((key) => key.toLowerCase() === name);
    value = found === undefined ? undefined : headers[found];
  }
  if (typeof value !== "string") value = value?.join(" ");
  if (value === undefined || value === "") throw new WebhookVerificationError(`missing header ${name}`);
  return value;
}
