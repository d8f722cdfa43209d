/**
 * The client: {@link Agentd}.
 */

import createClient, { type Client } from "openapi-fetch";

import {
  AgentdConnectionError,
  AgentdError,
  WaitTimeoutError,
  parseRetryAfter,
  problemFromResponse,
  readErrorBody,
} from "./errors.js";
import {
  EventFollower,
  type ReconnectHook,
  type ReconnectOptions,
  type ReconnectPolicy,
  reconnectPolicy,
} from "./events.js";
import type { paths } from "./generated/schema.js";
import {
  type FetchLike,
  type RetryInfo,
  type RetryOptions,
  type RetryPolicy,
  Transport,
  describeError,
  retryPolicy,
  sleep,
} from "./http.js";
import { LineSplitter } from "./sse.js";
import type {
  ApprovalRequest,
  BatchKickoffFields,
  BatchKickoffRequest,
  CrewRef,
  Inputs,
  KickoffFields,
  KickoffRequest,
  LlmDelta,
  Run,
  RunEvent,
} from "./types.js";
import { VERSION } from "./version.js";

/** How to reach the server, and how to behave when it is not there. */
export interface AgentdOptions {
  /** The server's URL (`http://127.0.0.1:8080`). */
  readonly baseUrl: string;
  /**
   * Sent as `Authorization: Bearer`; omit it for a server without keys. It never appears in an
   * error, a message or `toJSON()`.
   */
  readonly apiKey?: string;
  /** The `fetch` under everything (default: the global one), for tests and proxies. */
  readonly fetch?: FetchLike;
  /** When requests are retried (429, 503, network errors of requests safe to repeat). */
  readonly retries?: RetryOptions;
  /** How event streams reconnect. */
  readonly reconnect?: ReconnectOptions;
  /**
   * Each attempt's time limit for the whole answer, in milliseconds (default 30 s; 0: none).
   * Long polls get longer; an event stream's body is limited by `reconnect.readTimeoutMs` instead.
   */
  readonly timeoutMs?: number;
  /** Extra headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Told about every retry (the method and path only: never a header or the query). */
  readonly onRetry?: (info: RetryInfo) => void;
}

/** What every call takes. */
export interface CallOptions {
  /** Aborts the call (its retries and waits included); the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** Options of {@link Agentd.kickoff}: the kickoff's other members, and the key. */
export type KickoffOptions = KickoffFields &
  CallOptions & {
    /**
     * The `Idempotency-Key` (default: a new UUID). Every retry of the call sends the same one, so
     * a call starts at most one run; a key the server has seen answers the run it started.
     */
    readonly idempotencyKey?: string;
  };

/** Options of {@link Agentd.kickoffBatch}. */
export type KickoffBatchOptions = BatchKickoffFields & CallOptions & { readonly idempotencyKey?: string };

/** Called by {@link Agentd.kickoffAndWait} once the run is kicked off, with the run and its kickoff's key. */
export type KickoffHook = (run: Run, idempotencyKey: string) => void;

/** Options of {@link Agentd.wait}. */
export interface WaitOptions extends CallOptions {
  /** How long to wait at most, in milliseconds (default: as long as it takes). */
  readonly timeoutMs?: number;
}

/** Options of {@link Agentd.kickoffAndWait}. */
export type KickoffAndWaitOptions = KickoffOptions & {
  /** How long to wait at most from the kickoff's answer on, in milliseconds (default 600 s; `Infinity`: no limit). */
  readonly timeoutMs?: number;
  /** Told the run and its idempotency key between the kickoff and the wait. */
  readonly onKickoff?: KickoffHook;
};

/** Options of {@link Agentd.approveToolCall}. */
export interface ApproveOptions extends CallOptions {
  /** The arguments to run the call with instead of the model's (checked against the tool's schema). */
  readonly arguments?: Record<string, unknown>;
  /** Why, for the journal. */
  readonly reason?: string;
}

/** Options of {@link Agentd.rejectToolCall}. */
export interface RejectOptions extends CallOptions {
  /** Why (the model is told). */
  readonly reason?: string;
}

/** Options of {@link Agentd.events}. */
export interface EventsOptions extends CallOptions {
  /** Start after this event (its `seq`, as a `Last-Event-ID`); default: from the first event. */
  readonly lastEventId?: string | number;
  /** Yield `llm.delta` events too (a streaming run's live text, without `seq`). */
  readonly includeDeltas?: boolean;
  /** Called with the `Last-Event-ID` each time the stream resumes after a reconnection. */
  readonly onReconnect?: ReconnectHook;
}

/** The statuses {@link Agentd.wait} returns on: ended, or awaiting input. */
const STOPPED: ReadonlySet<string> = new Set(["completed", "failed", "cancelled", "awaiting_input"]);
/** The longest single long poll, in seconds (below undici's 300 s header timeout). */
const LONG_POLL_MAX_S = 120;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_KICKOFF_AND_WAIT_MS = 600_000;

type Result<D> = { data?: D; error?: unknown; response: Response };

/**
 * A client of an agentd server.
 *
 * ```ts
 * const agentd = new Agentd({ baseUrl: "http://127.0.0.1:8080", apiKey: "agd_..." });
 * const run = await agentd.kickoffAndWait(crew, { topic: "tides" });
 * ```
 *
 * {@link api} is the typed low-level client (openapi-fetch) for every other operation; it shares
 * this client's key, time limits and retries.
 */
export class Agentd {
  /** The server's URL, without a trailing slash. */
  readonly baseUrl: string;
  /**
   * The typed low-level client, generated from the OpenAPI document, for every operation:
   * `await agentd.api.GET("/v1/crews")` answers `{ data, error, response }`.
   */
  readonly api: Client<paths>;
  readonly #transport: Transport;
  readonly #reconnect: ReconnectPolicy;
  readonly #retry: RetryPolicy;

  constructor(options: AgentdOptions) {
    if (typeof options.baseUrl !== "string" || !/^https?:\/\//i.test(options.baseUrl)) {
      throw new TypeError("baseUrl must be an http:// or https:// URL");
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#retry = retryPolicy(options.retries);
    this.#reconnect = reconnectPolicy(options.reconnect);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(timeoutMs >= 0)) throw new RangeError("timeoutMs must not be negative");
    const fetchImpl: FetchLike = options.fetch ?? ((request) => globalThis.fetch(request));
    this.#transport = new Transport({
      fetch: fetchImpl,
      apiKey: options.apiKey || undefined,
      headers: { "user-agent": `agentd-client-typescript/${VERSION}`, ...options.headers },
      retry: this.#retry,
      timeoutMs,
      onRetry: options.onRetry,
    });
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: this.#transport.fetch });
  }

  /**
   * Kicks off a run of `crew` (a spec, or a registered crew's name) with `inputs`
   * (`POST /v1/kickoffs`).
   *
   * The request carries an `Idempotency-Key`: `options.idempotencyKey`, or a new UUID; every retry
   * of this call sends the same one, so it starts at most one run. The other members of `options`
   * are the kickoff's (`metadata`, `timeout_s`, `stream`, `webhooks`, ...).
   *
   * @returns the run as kicked off (`queued`, or further along), or, for a key the server has
   *   seen, the run that key started
   */
  async kickoff(crew: CrewRef, inputs?: Inputs, options: KickoffOptions = {}): Promise<Run> {
    const { idempotencyKey, signal, ...fields } = options;
    const key = idempotencyKey ?? newKey();
    const body: KickoffRequest = { crew, ...(inputs === undefined ? {} : { inputs }), ...fields };
    return this.#call("POST /v1/kickoffs", signal, () =>
      this.api.POST("/v1/kickoffs", { body, params: { header: { "Idempotency-Key": key } }, signal }),
    );
  }

  /**
   * Kicks off one run of `crew` per input set, all or none (`POST /v1/kickoffs/batch`), with an
   * `Idempotency-Key` as {@link kickoff} does.
   */
  async kickoffBatch(crew: CrewRef, inputs: readonly Inputs[], options: KickoffBatchOptions = {}): Promise<Run[]> {
    const { idempotencyKey, signal, ...fields } = options;
    const key = idempotencyKey ?? newKey();
    const body: BatchKickoffRequest = { crew, inputs: [...inputs], ...fields };
    const batch = await this.#call("POST /v1/kickoffs/batch", signal, () =>
      this.api.POST("/v1/kickoffs/batch", { body, params: { header: { "Idempotency-Key": key } }, signal }),
    );
    return batch.runs;
  }

  /** The run with its tasks, output, error and usage (`GET /v1/runs/{id}`). */
  async getRun(runId: string, options: CallOptions = {}): Promise<Run> {
    const { signal } = options;
    return this.#call("GET /v1/runs/{id}", signal, () =>
      this.api.GET("/v1/runs/{id}", { params: { path: { id: runId } }, signal }),
    );
  }

  /**
   * Waits until the run has ended or awaits input (a review or a tool call's approval), long
   * polling `GET /v1/runs/{id}/wait` as often as needed.
   *
   * @throws {WaitTimeoutError} the time is up; its `run` is how the run stood
   */
  async wait(runId: string, options: WaitOptions = {}): Promise<Run> {
    const { signal, timeoutMs } = options;
    const deadline =
      timeoutMs === undefined || timeoutMs === Infinity ? undefined : Date.now() + Math.max(0, timeoutMs);
    for (;;) {
      const pollS =
        deadline === undefined
          ? LONG_POLL_MAX_S
          : Math.max(0, Math.min(LONG_POLL_MAX_S, Math.ceil((deadline - Date.now()) / 1000)));
      const run = await this.#call("GET /v1/runs/{id}/wait", signal, () =>
        this.api.GET("/v1/runs/{id}/wait", {
          params: { path: { id: runId }, query: { timeout_s: pollS } },
          fetch: this.#transport.fetchWith({ timeoutMs: (pollS + 30) * 1000 }),
          signal,
        }),
      );
      if (STOPPED.has(run.status)) return run;
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new WaitTimeoutError(runId, timeoutMs ?? 0, run);
      }
    }
  }

  /**
   * {@link kickoff}, then {@link wait} (`timeoutMs` at most, default 600 s, from the kickoff's
   * answer on); `onKickoff` is told the run and its idempotency key in between.
   */
  async kickoffAndWait(crew: CrewRef, inputs?: Inputs, options: KickoffAndWaitOptions = {}): Promise<Run> {
    const { timeoutMs = DEFAULT_KICKOFF_AND_WAIT_MS, onKickoff, idempotencyKey, ...rest } = options;
    const key = idempotencyKey ?? newKey();
    const run = await this.kickoff(crew, inputs, { ...rest, idempotencyKey: key });
    onKickoff?.(run, key);
    return this.wait(run.id, { timeoutMs, ...(rest.signal === undefined ? {} : { signal: rest.signal }) });
  }

  /** Cancels a run: a queued run at once, a running one as soon as its worker notices. */
  async cancel(runId: string, options: CallOptions = {}): Promise<Run> {
    const { signal } = options;
    return this.#call("POST /v1/runs/{id}/cancel", signal, () =>
      this.api.POST("/v1/runs/{id}/cancel", { params: { path: { id: runId } }, signal }),
    );
  }

  /**
   * Approves a tool call that awaits approval: it runs (with `options.arguments` instead of the
   * model's, when given).
   *
   * @param toolCallId the call's id (`<task>#<iteration>/<provider id>`, as in
   *   `tool.approval_requested`); it is percent-encoded here
   * @returns the run as it is now (queued again when no call waits any more)
   */
  async approveToolCall(runId: string, toolCallId: string, options: ApproveOptions = {}): Promise<Run> {
    const { signal, arguments: args, reason } = options;
    const body: ApprovalRequest = { approve: true };
    if (args !== undefined) body.arguments = args;
    if (reason !== undefined) body.reason = reason;
    return this.#decide(runId, toolCallId, body, signal);
  }

  /** Rejects a tool call that awaits approval: it does not run, and the model is told (with `reason`). */
  async rejectToolCall(runId: string, toolCallId: string, options: RejectOptions = {}): Promise<Run> {
    const { signal, reason } = options;
    const body: ApprovalRequest = { approve: false };
    if (reason !== undefined) body.reason = reason;
    return this.#decide(runId, toolCallId, body, signal);
  }

  /**
   * The run's events, from the start (or after `lastEventId`), live until the run ends: an async
   * iterable over `GET /v1/runs/{id}/events` as server-sent events.
   *
   * The iteration ends after `run.completed`, `run.failed` or `run.cancelled` (or at once when
   * the server answers 204: the run has ended and nothing follows `lastEventId`). When the
   * connection drops before that (the stream ends early, the connection is refused, reset or
   * silent, the server answers 429 or 5xx), it reconnects with backoff (honouring the server's
   * `retry:` and `Retry-After`) and resumes with `Last-Event-ID` set to the last event received:
   * no event is repeated or lost. `onReconnect` is told each resumption. Keep-alive comments are
   * skipped; `llm.delta` events are yielded only with `includeDeltas`. Leaving the loop early
   * (`break`) closes the connection.
   *
   * @throws {StreamClosedError} the server ended the stream for good (the key was revoked...)
   * @throws {ProblemError} the server refused the stream (404 for an unknown run, 401, 403)
   * @throws {AgentdConnectionError} reconnecting failed `reconnect.maxAttempts` times in a row
   */
  events(runId: string, options?: EventsOptions & { readonly includeDeltas?: false }): AsyncGenerator<RunEvent, void, undefined>;
  events(
    runId: string,
    options: EventsOptions & { readonly includeDeltas: true },
  ): AsyncGenerator<RunEvent | LlmDelta, void, undefined>;
  events(runId: string, options?: EventsOptions): AsyncGenerator<RunEvent | LlmDelta, void, undefined>;
  events(runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent | LlmDelta, void, undefined> {
    return this.#follow(runId, options);
  }

  /** Only the URL: the key stays out of logs and serialisations. */
  toJSON(): { baseUrl: string } {
    return { baseUrl: this.baseUrl };
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `Agentd { baseUrl: ${JSON.stringify(this.baseUrl)} }`;
  }

  async #decide(runId: string, toolCallId: string, body: ApprovalRequest, signal: AbortSignal | undefined): Promise<Run> {
    const path = "/v1/runs/{id}/tool-calls/{tool_call_id}/approval";
    return this.#call(`POST ${path}`, signal, () =>
      this.api.POST(path, { params: { path: { id: runId, tool_call_id: toolCallId } }, body, signal }),
    );
  }

  /** Sends one request of the generated client; answers its data, or throws the typed error. */
  async #call<D>(what: string, signal: AbortSignal | undefined, send: () => Promise<Result<D>>): Promise<D> {
    let result: Result<D>;
    try {
      result = await send();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof AgentdError) throw error;
      if (error instanceof SyntaxError) {
        throw new AgentdError(`${what}: the answer is not JSON: ${error.message}`, { cause: error });
      }
      throw new AgentdConnectionError(`${what}: ${describeError(error)}`, { cause: error });
    }
    const { data, error, response } = result;
    if (!response.ok) throw problemFromResponse(response, error);
    if (data === undefined) throw new AgentdError(`${what}: an empty answer (${response.status})`);
    return data;
  }

  async *#follow(runId: string, options: EventsOptions): AsyncGenerator<RunEvent | LlmDelta, void, undefined> {
    const { signal } = options;
    const path = `/v1/runs/${encodeURIComponent(runId)}/events`;
    const follower = new EventFollower(path, {
      lastEventId: options.lastEventId === undefined ? undefined : String(options.lastEventId),
      includeDeltas: options.includeDeltas ?? false,
      policy: this.#reconnect,
      onReconnect: options.onReconnect,
    });
    for (;;) {
      signal?.throwIfAborted();
      const waitMs = yield* this.#connection(path, follower, signal);
      if (waitMs === undefined) return;
      await sleep(waitMs, signal);
    }
  }

  /**
   * One connection of an event stream: yields its events; returns how long to wait before the
   * next connection, or `undefined` when the stream is over.
   */
  async *#connection(
    path: string,
    follower: EventFollower,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<RunEvent | LlmDelta, number | undefined, undefined> {
    // Ends this connection: on the caller's abort, a silent connection, or leaving the loop.
    const connection = new AbortController();
    const onAbort = (): void => connection.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      let response: Response;
      try {
        response = await this.#transport.send(
          new Request(this.baseUrl + path, { headers: follower.headers(), signal: connection.signal }),
          { noRetry: true },
        );
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        return follower.failed(describeError(error));
      }
      if (response.status === 204) return undefined;
      if (response.status === 429 || response.status >= 500) {
        await response.body?.cancel().catch(() => undefined);
        return follower.failed(`HTTP ${response.status}`, parseRetryAfter(response.headers.get("retry-after")));
      }
      if (!response.ok) throw problemFromResponse(response, await readErrorBody(response));
      follower.connected();
      if (response.body === null) return follower.failed("the stream ended before the run");
      const reader = response.body.getReader();
      const lines = new LineSplitter();
      try {
        for (;;) {
          const chunk = await readWithin(reader, this.#reconnect.readTimeoutMs, connection);
          if (chunk.done) return follower.failed("the stream ended before the run");
          follower.progressed();
          for (const line of lines.push(chunk.value)) {
            const event = follower.feed(line);
            if (event !== undefined) yield event;
            if (follower.done) return undefined;
          }
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof AgentdError) throw error;
        return follower.failed(describeError(connection.signal.aborted ? connection.signal.reason : error));
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      connection.abort();
    }
  }
}

/** Reads the next chunk; aborts `connection` when none comes within `timeoutMs`. */
async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  timeoutMs: number,
  connection: AbortController,
): ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]> {
  const timer = setTimeout(
    () => connection.abort(new DOMException(`no data for ${timeoutMs} ms`, "TimeoutError")),
    timeoutMs,
  );
  try {
    return await reader.read();
  } finally {
    clearTimeout(timer);
  }
}

function newKey(): string {
  return globalThis.crypto.randomUUID();
}
