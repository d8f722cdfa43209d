/**
 * Following a run's events over SSE, with exact resumption after a dropped connection.
 *
 * The I/O-free part lives here ({@link EventFollower}); {@link Agentd.events} drives it.
 */

import { AgentdConnectionError, AgentdError, StreamClosedError, isRecord } from "./errors.js";
import { SseDecoder } from "./sse.js";
import type { LlmDelta, RunEvent, RunEventType } from "./types.js";

/** The event types that end a run, and with them its event stream. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<RunEventType> = new Set<RunEventType>([
  "run.completed",
  "run.failed",
  "run.cancelled",
]);

/** Whether `event` ends the run (`run.completed`, `run.failed` or `run.cancelled`). */
export function isTerminalEvent(event: { readonly type: string }): boolean {
  return (TERMINAL_EVENT_TYPES as ReadonlySet<string>).has(event.type);
}

/**
 * Called each time an event stream resumes after a reconnection, with the `Last-Event-ID` it
 * resumed after (`undefined` when no event had been received: the stream started again).
 */
export type ReconnectHook = (lastEventId: string | undefined) => void;

/** How an event stream reconnects after its connection drops. */
export interface ReconnectOptions {
  /**
   * Consecutive failed connections tolerated before giving up with
   * {@link AgentdConnectionError} (default 30: about two minutes of a server being away). The
   * count starts again once a connection delivers anything.
   */
  readonly maxAttempts?: number;
  /** The first wait when the server sent no `retry:` (default 500 ms). */
  readonly initialDelayMs?: number;
  /**
   * The longest wait between two attempts (default 5 s; or the server's `retry:` when longer).
   * The n-th consecutive failure waits `base * 2^(n-1)`, `base` being the server's last `retry:`
   * (agentd sends 500 when it shuts down) or {@link initialDelayMs}. A 429 or 5xx answer's
   * `Retry-After` is waited instead (60 s at most).
   */
  readonly maxDelayMs?: number;
  /**
   * Time without a byte after which a connection is taken as dead (default 45 s; the server
   * sends a keep-alive comment every 15 s).
   */
  readonly readTimeoutMs?: number;
}

/** {@link ReconnectOptions} with every default applied. */
export type ReconnectPolicy = Required<ReconnectOptions>;

/** The default {@link ReconnectPolicy}. */
export const DEFAULT_RECONNECT: ReconnectPolicy = Object.freeze({
  maxAttempts: 30,
  initialDelayMs: 500,
  maxDelayMs: 5_000,
  readTimeoutMs: 45_000,
});

/** Validates {@link ReconnectOptions} and applies the defaults. */
export function reconnectPolicy(options: ReconnectOptions | undefined): ReconnectPolicy {
  const given = Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined));
  const policy: ReconnectPolicy = { ...DEFAULT_RECONNECT, ...given };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 0) {
    throw new RangeError("reconnect.maxAttempts must be an integer, not negative");
  }
  for (const name of ["initialDelayMs", "maxDelayMs", "readTimeoutMs"] as const) {
    if (!(policy[name] >= 0)) throw new RangeError(`reconnect.${name} must not be negative`);
  }
  return policy;
}

const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The state of one `events()` iteration: what to send when (re)connecting, what to make of each
 * line received, and how long to wait after a connection ends early.
 */
export class EventFollower {
  /** Whether the terminal event was yielded. */
  done = false;
  readonly #what: string;
  readonly #includeDeltas: boolean;
  readonly #policy: ReconnectPolicy;
  readonly #onReconnect: ReconnectHook | undefined;
  #decoder: SseDecoder;
  #lastSeq: number;
  #failures = 0;
  #connections = 0;

  /**
   * @param what what is followed, for messages (the stream's path)
   * @param lastEventId start after this event (its `seq`)
   */
  constructor(
    what: string,
    options: {
      lastEventId: string | undefined;
      includeDeltas: boolean;
      policy: ReconnectPolicy;
      onReconnect: ReconnectHook | undefined;
    },
  ) {
    this.#what = what;
    this.#includeDeltas = options.includeDeltas;
    this.#policy = options.policy;
    this.#onReconnect = options.onReconnect;
    this.#decoder = new SseDecoder(options.lastEventId);
    const after = options.lastEventId === undefined ? NaN : Number(options.lastEventId);
    this.#lastSeq = Number.isSafeInteger(after) ? after : 0;
  }

  /** The `Last-Event-ID` of the next request (`undefined`: none yet). */
  get lastEventId(): string | undefined {
    return this.#decoder.lastEventId || undefined;
  }

  /** The headers of the next request: `Last-Event-ID` once there is one. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = { accept: "text/event-stream", "cache-control": "no-cache" };
    const lastEventId = this.lastEventId;
    if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
    return headers;
  }

  /** A request was answered with the stream (200): tell the hook when it is a resumption. */
  connected(): void {
    this.#connections += 1;
    // A message cut by the drop must not run into the first one of the next connection.
    this.#decoder = new SseDecoder(this.#decoder.lastEventId, this.#decoder.retryMs);
    if (this.#connections > 1) this.#onReconnect?.(this.lastEventId);
  }

  /** Something arrived: the count of failed connections starts again. */
  progressed(): void {
    this.#failures = 0;
  }

  /**
   * Takes one line of the stream; answers the event it completes that is to be yielded.
   *
   * @throws {StreamClosedError} the server ended the stream for good (`stream.closed`)
   * @throws {AgentdError} a message whose data is not an event envelope
   */
  feed(line: string): RunEvent | LlmDelta | undefined {
    const message = this.#decoder.feed(line);
    if (message === undefined) return undefined;
    let envelope: unknown;
    try {
      envelope = JSON.parse(message.data);
    } catch (error) {
      throw new AgentdError(`malformed event data from ${this.#what}: ${String(error)}`, { cause: error });
    }
    if (!isRecord(envelope)) throw new AgentdError(`malformed event data from ${this.#what}: not an object`);
    if (message.event === "stream.closed" || envelope["type"] === "stream.closed") {
      throw new StreamClosedError(String(envelope["reason"] ?? ""), String(envelope["detail"] ?? ""));
    }
    if (envelope["type"] === undefined) envelope["type"] = message.event;
    const seq = envelope["seq"];
    if (typeof seq !== "number" || !Number.isInteger(seq)) {
      // llm.delta: live only, without seq.
      return this.#includeDeltas ? (envelope as unknown as LlmDelta) : undefined;
    }
    if (seq <= this.#lastSeq) return undefined; // already yielded: never repeat an event
    this.#lastSeq = seq;
    const event = envelope as unknown as RunEvent;
    this.done = isTerminalEvent(event);
    return event;
  }

  /**
   * The connection ended (or could not be made) before the terminal event: answers the time to
   * wait before the next attempt, in milliseconds.
   *
   * @param retryAfterSeconds the answer's `Retry-After`, if any
   * @throws {AgentdConnectionError} the attempts are used up
   */
  failed(reason: string, retryAfterSeconds?: number): number {
    this.#failures += 1;
    if (this.#failures > this.#policy.maxAttempts) {
      throw new AgentdConnectionError(
        `gave up following ${this.#what} after ${this.#failures} failed connections (last: ${reason})`,
      );
    }
    if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS);
    const base = this.#decoder.retryMs ?? this.#policy.initialDelayMs;
    return Math.min(Math.max(this.#policy.maxDelayMs, base), base * 2 ** (this.#failures - 1));
  }
}
