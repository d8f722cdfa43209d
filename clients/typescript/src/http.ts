/**
 * The transport under every request of the client (the hand-written methods and the generated
 * `api` alike): the API key, per-attempt timeouts, and retries.
 *
 * A request is sent again when the server answers 429 or 503 (after what its `Retry-After` says),
 * and, for requests that are safe to repeat, when the connection fails or times out: `GET`,
 * `HEAD`, `OPTIONS`, `PUT` and `DELETE`, and any request carrying an `Idempotency-Key` (a kickoff:
 * the server answers the run of the first attempt to every later one). The request is sent again
 * as it is, so a kickoff keeps its key on every attempt.
 */

import { parseRetryAfter } from "./errors.js";

/** A `fetch` as the client calls it. */
export type FetchLike = (input: Request) => Promise<Response>;

/** When and how requests are retried. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  readonly maxAttempts?: number;
  /**
   * The wait before the second attempt when the server named none (a connection error, or a
   * 429/503 without `Retry-After`), doubled for each further attempt, with jitter (default 500 ms).
   */
  readonly initialDelayMs?: number;
  /** The longest such wait (default 8 s). */
  readonly maxDelayMs?: number;
  /**
   * The longest `Retry-After` honoured (default 60 s): when the server asks for a longer wait (a
   * daily quota resets at midnight), the error is thrown at once, with its `retryAfter`.
   */
  readonly maxRetryAfterMs?: number;
}

/** {@link RetryOptions} with every default applied. */
export type RetryPolicy = Required<RetryOptions>;

/** The default {@link RetryPolicy}. */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  maxAttempts: 4,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
});

/** What {@link TransportOptions.onRetry} is told about a retry: never a header, never the query. */
export interface RetryInfo {
  readonly method: string;
  /** The URL's path. */
  readonly path: string;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** The wait before the next attempt. */
  readonly delayMs: number;
  /** `429`, `503`, or the name of the network error. */
  readonly reason: string;
}

/** Validates {@link RetryOptions} and applies the defaults. */
export function retryPolicy(options: RetryOptions | undefined): RetryPolicy {
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...definedOnly(options ?? {}) };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError("retries.maxAttempts must be an integer of at least 1");
  }
  for (const name of ["initialDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const) {
    if (!(policy[name] >= 0)) throw new RangeError(`retries.${name} must not be negative`);
  }
  return policy;
}

/** The wait after failed attempt number `attempt` (from 1) when the server named none: capped, with jitter. */
export function backoffMs(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** How the {@link Transport} sends requests. */
export interface TransportOptions {
  readonly fetch: FetchLike;
  readonly apiKey: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly retry: RetryPolicy;
  /** Each attempt's time limit for the whole answer (the body of an event stream is not limited). */
  readonly timeoutMs: number;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
}

/** Options of one {@link Transport.send}. */
export interface SendOptions {
  /** This request's per-attempt time limit (long polls wait longer than the default). */
  readonly timeoutMs?: number;
  /** Send it once, whatever the answer (event streams reconnect on their own). */
  readonly noRetry?: boolean;
}

/** Sends requests with the key, the extra headers, time limits and retries. */
export class Transport {
  readonly #options: TransportOptions;

  constructor(options: TransportOptions) {
    this.#options = options;
  }

  /** A `fetch` for openapi-fetch: every request goes through {@link send}. */
  get fetch(): FetchLike {
    return (request) => this.send(request);
  }

  /** A `fetch` that sends with these options. */
  fetchWith(options: SendOptions): FetchLike {
    return (request) => this.send(request, options);
  }

  /**
   * Sends `request` (with the key and the extra headers added), retrying as the policy says. The
   * last answer is returned, whatever its status; the last network error is thrown.
   */
  async send(request: Request, options: SendOptions = {}): Promise<Response> {
    const { retry, onRetry } = this.#options;
    this.#decorate(request.headers);
    const timeoutMs = options.timeoutMs ?? this.#options.timeoutMs;
    const maxAttempts = options.noRetry ? 1 : retry.maxAttempts;
    const safe = IDEMPOTENT_METHODS.has(request.method) || request.headers.has("idempotency-key");
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= maxAttempts;
      let delayMs: number;
      let reason: string;
      try {
        const response = await this.#attempt(last ? request : request.clone(), timeoutMs);
        if (last || !RETRY_STATUSES.has(response.status)) return response;
        const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
        if (retryAfter === undefined) {
          delayMs = backoffMs(retry, attempt);
        } else if (retryAfter * 1000 <= retry.maxRetryAfterMs) {
          delayMs = retryAfter * 1000;
        } else {
          return response;
        }
        await response.body?.cancel().catch(() => undefined);
        reason = String(response.status);
      } catch (error) {
        if (last || !safe || request.signal.aborted) throw error;
        delayMs = backoffMs(retry, attempt);
        reason = errorName(error);
      }
      onRetry?.({ method: request.method, path: new URL(request.url).pathname, attempt, delayMs, reason });
      await sleep(delayMs, request.signal);
    }
  }

  /** Adds the key and the extra headers (those the request sets itself win). */
  #decorate(headers: Headers): void {
    for (const [name, value] of Object.entries(this.#options.headers)) {
      if (!headers.has(name)) headers.set(name, value);
    }
    if (this.#options.apiKey !== undefined && !headers.has("authorization")) {
      headers.set("authorization", `Bearer ${this.#options.apiKey}`);
    }
  }

  async #attempt(request: Request, timeoutMs: number): Promise<Response> {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return this.#options.fetch(request);
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new DOMException(`no complete answer within ${timeoutMs} ms`, "TimeoutError")),
      timeoutMs,
    );
    try {
      const response = await this.#options.fetch(
        new Request(request, { signal: AbortSignal.any([request.signal, timeout.signal]) }),
      );
      // An event stream's body is read under the caller's signal only; any other answer is read
      // whole within the time limit.
      if (isEventStream(response)) return response;
      const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } catch (error) {
      // Report the time limit rather than the bare abort it caused.
      throw timeout.signal.aborted && !request.signal.aborted ? timeout.signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
  }
}

const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 204, 205, 304]);

function isEventStream(response: Response): boolean {
  return (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A network error's name and code, for messages: `TypeError (ECONNREFUSED)`. */
export function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const cause: unknown = error.cause;
  const code =
    typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
      ? cause.code
      : undefined;
  return code === undefined ? error.name : `${error.name} (${code})`;
}

/** A network error's description, for messages (never a header: it holds nothing of the request). */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause: unknown = error.cause;
  const detail = cause instanceof Error && cause.message !== "" ? `: ${cause.message}` : "";
  return `${error.name}: ${error.message}${detail}`;
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
