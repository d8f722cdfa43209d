/**
 * The errors the client throws.
 *
 * Every error answered by agentd is an RFC 9457 problem document (`application/problem+json`) and
 * is thrown as a {@link ProblemError}, or rather as the subclass for its `type`
 * (`/problems/<slug>`), falling back on its HTTP status for a type this client does not know.
 * No error holds the request, so none can reveal the API key.
 */

import type { FieldError, Run, StreamClosed } from "./types.js";

/** The base class of every error this package throws. */
export class AgentdError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The server could not be reached, or the connection broke, after every allowed attempt. */
export class AgentdConnectionError extends AgentdError {
  override readonly name: string = "AgentdConnectionError";
}

/** The fields of a problem document, as {@link ProblemError} carries them. */
export interface ProblemDetails {
  /** The HTTP status. */
  readonly status: number;
  /** `/problems/<slug>`, or `about:blank` when the answer was no problem document. */
  readonly type: string;
  /** The status's reason phrase. */
  readonly title: string;
  /** What went wrong, for people. */
  readonly detail: string;
  /** For validation errors, every offending field (else empty). */
  readonly errors: readonly FieldError[];
}

/** The problem document of an error, as the server sent it (`errors` only when there are some). */
export interface ProblemDocument {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
}

/** An error answered by the server as a problem document. */
export class ProblemError extends AgentdError implements ProblemDetails {
  override readonly name: string = "ProblemError";
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly errors: readonly FieldError[];
  /** The answer's `Retry-After` in seconds (429 and 503 answers), when it had one. */
  readonly retryAfter: number | undefined;

  constructor(problem: ProblemDetails, retryAfter?: number) {
    super(problemMessage(problem));
    this.status = problem.status;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail;
    this.errors = Object.freeze([...problem.errors]);
    this.retryAfter = retryAfter;
  }

  /** The `/problems/<slug>` slug (`validation`, `not-found`, ...), `undefined` for `about:blank`. */
  get slug(): string | undefined {
    return this.type.startsWith(PROBLEM_PREFIX) ? this.type.slice(PROBLEM_PREFIX.length) : undefined;
  }

  /** The problem document as the server sent it (`errors` only when there are some). */
  toProblem(): ProblemDocument {
    const document = { type: this.type, title: this.title, status: this.status, detail: this.detail };
    return this.errors.length > 0 ? { ...document, errors: this.errors } : document;
  }

  toJSON(): ProblemDocument & { name: string; retryAfter?: number } {
    const json = { name: this.name, ...this.toProblem() };
    return this.retryAfter === undefined ? json : { ...json, retryAfter: this.retryAfter };
  }
}

/** 400 `/problems/bad-request`: malformed JSON, a bad query parameter or header. */
export class BadRequestError extends ProblemError {
  override readonly name: string = "BadRequestError";
}
/** 401 `/problems/unauthorized`: no valid API key. */
export class UnauthorizedError extends ProblemError {
  override readonly name: string = "UnauthorizedError";
}
/** 403 `/problems/forbidden`: the key lacks the scope the operation needs (the detail names it). */
export class ForbiddenError extends ProblemError {
  override readonly name: string = "ForbiddenError";
}
/** 404 `/problems/not-found`: the resource does not exist, or is another tenant's. */
export class NotFoundError extends ProblemError {
  override readonly name: string = "NotFoundError";
}
/** 405 `/problems/method-not-allowed`. */
export class MethodNotAllowedError extends ProblemError {
  override readonly name: string = "MethodNotAllowedError";
}
/** 408 `/problems/request-timeout`: the request's body did not arrive in time. */
export class RequestTimeoutError extends ProblemError {
  override readonly name: string = "RequestTimeoutError";
}
/** 409 `/problems/conflict`: the request does not fit the resource's state. */
export class ConflictError extends ProblemError {
  override readonly name: string = "ConflictError";
}
/** 413 `/problems/payload-too-large`: a body over the server's limit. */
export class PayloadTooLargeError extends ProblemError {
  override readonly name: string = "PayloadTooLargeError";
}
/** 415 `/problems/unsupported-media-type`: a body that is not JSON. */
export class UnsupportedMediaTypeError extends ProblemError {
  override readonly name: string = "UnsupportedMediaTypeError";
}
/** 422 `/problems/validation`: the body breaks a rule; {@link ProblemError.errors} names every field. */
export class ValidationError extends ProblemError {
  override readonly name: string = "ValidationError";
}
/** 429 `/problems/quota`: a quota or rate limit; {@link ProblemError.retryAfter} says when to try again. */
export class RateLimitedError extends ProblemError {
  override readonly name: string = "RateLimitedError";
}
/** 500 `/problems/internal`: a bug in the server (logged there with its cause). */
export class InternalServerError extends ProblemError {
  override readonly name: string = "InternalServerError";
}
/** 501 `/problems/not-configured`: a feature the server was not configured for (secrets, webhooks). */
export class NotConfiguredError extends ProblemError {
  override readonly name: string = "NotConfiguredError";
}
/** 502 `/problems/upstream`: an upstream service answered badly. */
export class UpstreamError extends ProblemError {
  override readonly name: string = "UpstreamError";
}
/** 503 `/problems/unavailable`: the server cannot serve now; {@link ProblemError.retryAfter} says when to try again. */
export class UnavailableError extends ProblemError {
  override readonly name: string = "UnavailableError";
}

/**
 * The server ended an event stream for good (`event: stream.closed`): the key it was opened with
 * was revoked or expired, or its tenant deleted. Reconnecting with the same key is refused.
 */
export class StreamClosedError extends AgentdError {
  override readonly name: string = "StreamClosedError";
  /** `key_revoked`, `key_expired` or `tenant_deleted`. */
  readonly reason: StreamClosed["reason"] | string;
  readonly detail: string;

  constructor(reason: string, detail: string) {
    super(`the server closed the event stream: ${reason}: ${detail}`);
    this.reason = reason;
    this.detail = detail;
  }
}

/** A run did not end (nor stop for input) within the time given; {@link run} is how it stood. */
export class WaitTimeoutError extends AgentdError {
  override readonly name: string = "WaitTimeoutError";
  readonly runId: string;
  readonly run: Run;

  constructor(runId: string, timeoutMs: number, run: Run) {
    super(`run ${runId} did not end within ${timeoutMs / 1000} s`);
    this.runId = runId;
    this.run = run;
  }
}

/** A webhook delivery failed verification: a missing header, a bad signature, an old or future timestamp. */
export class WebhookVerificationError extends AgentdError {
  override readonly name: string = "WebhookVerificationError";
}

const PROBLEM_PREFIX = "/problems/";

type ProblemClass = new (problem: ProblemDetails, retryAfter?: number) => ProblemError;

const BY_SLUG: ReadonlyMap<string, ProblemClass> = new Map<string, ProblemClass>([
  ["bad-request", BadRequestError],
  ["unauthorized", UnauthorizedError],
  ["forbidden", ForbiddenError],
  ["not-found", NotFoundError],
  ["method-not-allowed", MethodNotAllowedError],
  ["request-timeout", RequestTimeoutError],
  ["conflict", ConflictError],
  ["payload-too-large", PayloadTooLargeError],
  ["unsupported-media-type", UnsupportedMediaTypeError],
  ["validation", ValidationError],
  ["quota", RateLimitedError],
  ["internal", InternalServerError],
  ["not-configured", NotConfiguredError],
  ["upstream", UpstreamError],
  ["unavailable", UnavailableError],
]);

const BY_STATUS: ReadonlyMap<number, ProblemClass> = new Map<number, ProblemClass>([
  [400, BadRequestError],
  [401, UnauthorizedError],
  [403, ForbiddenError],
  [404, NotFoundError],
  [405, MethodNotAllowedError],
  [408, RequestTimeoutError],
  [409, ConflictError],
  [413, PayloadTooLargeError],
  [415, UnsupportedMediaTypeError],
  [422, ValidationError],
  [429, RateLimitedError],
  [500, InternalServerError],
  [501, NotConfiguredError],
  [502, UpstreamError],
  [503, UnavailableError],
]);

/**
 * The typed error of an error answer.
 *
 * A body that is not a problem document (a proxy's HTML page, say) still gives the error of its
 * status, with type `about:blank` and the start of the body as its detail.
 *
 * @param status the answer's HTTP status
 * @param statusText its reason phrase
 * @param headers its headers (only `Retry-After` is read)
 * @param body its body: parsed JSON, or text, or `undefined`
 */
export function problemFromAnswer(
  status: number,
  statusText: string,
  headers: Headers,
  body: unknown,
): ProblemError {
  const problem = toProblemDetails(status, statusText, body);
  const slug = problem.type.startsWith(PROBLEM_PREFIX) ? problem.type.slice(PROBLEM_PREFIX.length) : "";
  const ErrorClass = BY_SLUG.get(slug) ?? BY_STATUS.get(status) ?? ProblemError;
  return new ErrorClass(problem, parseRetryAfter(headers.get("retry-after")));
}

/** {@link problemFromAnswer} for a `Response` whose body was read (`body`: JSON, text or `undefined`). */
export function problemFromResponse(response: Response, body: unknown): ProblemError {
  return problemFromAnswer(response.status, response.statusText, response.headers, body);
}

/** Reads the body of an error answer: JSON when it parses, else its text. */
export async function readErrorBody(response: Response): Promise<unknown> {
  let text: string;
  try {
    text = await response.text();
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Reads a `Retry-After` header, in seconds: delay-seconds, or an HTTP date (the seconds from now
 * until then, 0 when it has passed). `undefined` when it is absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

function toProblemDetails(status: number, statusText: string, body: unknown): ProblemDetails {
  if (!isRecord(body)) {
    // Not a problem document (a proxy's page, an empty body): keep a bounded excerpt of it.
    const text = typeof body === "string" ? body.slice(0, 500).trim() : "";
    return { status, type: "about:blank", title: statusText || `HTTP ${status}`, detail: text, errors: [] };
  }
  const type = typeof body["type"] === "string" && body["type"] !== "" ? body["type"] : "about:blank";
  const title =
    typeof body["title"] === "string" && body["title"] !== "" ? body["title"] : statusText || `HTTP ${status}`;
  const rawErrors = body["errors"];
  const errors = (Array.isArray(rawErrors) ? rawErrors : []).filter(isRecord).map(
    (e): FieldError => ({
      field: typeof e["field"] === "string" ? e["field"] : "",
      message: typeof e["message"] === "string" ? e["message"] : "",
    }),
  );
  const documentStatus = body["status"];
  return {
    status: typeof documentStatus === "number" && Number.isInteger(documentStatus) ? documentStatus : status,
    type,
    title,
    detail: typeof body["detail"] === "string" ? body["detail"] : "",
    errors,
  };
}

function problemMessage(problem: ProblemDetails): string {
  const head = `${problem.status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ""}`;
  const fields = problem.errors.map((e) => `${e.field}: ${e.message}`);
  return fields.length > 0 ? `${head} (${fields.join("; ")})` : head;
}

/** Whether `value` is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
