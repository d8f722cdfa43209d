// A scripted HTTP server on 127.0.0.1 for the unit tests.
//
// Each request is recorded and answered by the script: an array (the n-th request gets the n-th
// reply, the last one repeats) or a function of the recorded request. A reply is
// `{status, headers, body, pieces, pause}`: `body` is sent whole with a Content-Length; `pieces`
// are sent one by one without one, `pause` ms apart, and the connection is closed after them.
// `HANG_UP` closes the connection without an answer; `SILENT` sends an event stream's headers and
// then nothing; `NO_ANSWER` sends nothing at all.

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

export const HANG_UP = Symbol("hang up");
export const SILENT = Symbol("silent");
export const NO_ANSWER = Symbol("no answer");

export class StubServer {
  /** @type {Array<{method: string, path: string, query: URLSearchParams, headers: Record<string, string>, body: string, at: number, json(): unknown}>} */
  requests = [];
  #script;
  #server;
  #sockets = new Set();

  constructor(script) {
    this.#script = script;
    this.#server = createServer((req, res) => this.#handle(req, res));
    this.#server.on("connection", (socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
    });
  }

  /** Starts listening (on `port`, default any free one). */
  async start(port = 0) {
    await new Promise((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, "127.0.0.1", resolve);
    });
    return this;
  }

  get port() {
    return this.#server.address().port;
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Stops listening and drops every open connection. */
  async stop() {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(() => resolve()));
  }

  async [Symbol.asyncDispose]() {
    await this.stop();
  }

  async #handle(req, res) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const url = new URL(req.url, "http://stub");
    const body = Buffer.concat(chunks).toString("utf8");
    const recorded = {
      method: req.method,
      path: url.pathname,
      rawPath: req.url,
      query: url.searchParams,
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body,
      at: performance.now(),
      json: () => JSON.parse(body),
      closed: new Promise((resolve) => res.once("close", resolve)),
    };
    this.requests.push(recorded);
    const script = this.#script;
    const reply =
      typeof script === "function"
        ? await script(recorded, this.requests.length)
        : script[Math.min(this.requests.length, script.length) - 1];
    if (reply === HANG_UP) {
      req.socket.destroy();
      return;
    }
    if (reply === NO_ANSWER) return;
    if (reply === SILENT) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.flushHeaders();
      return;
    }
    const headers = { ...(reply.headers ?? {}) };
    if (reply.pieces !== undefined) {
      res.writeHead(reply.status ?? 200, headers);
      res.flushHeaders();
      for (const piece of reply.pieces) {
        if (reply.pause) await new Promise((resolve) => setTimeout(resolve, reply.pause));
        if (res.destroyed) return;
        res.write(piece);
      }
      // Close the connection after the pieces: the stream ends (or is cut) here.
      res.end();
      return;
    }
    const payload = Buffer.from(reply.body ?? "");
    headers["content-length"] = String(payload.length);
    res.writeHead(reply.status ?? 200, headers);
    res.end(payload);
  }
}

/** Starts a stub server with this script. */
export function stub(script) {
  return new StubServer(script).start();
}

export function jsonReply(status, document, headers = {}) {
  const contentType = status >= 400 ? "application/problem+json" : "application/json";
  return { status, headers: { "content-type": contentType, ...headers }, body: JSON.stringify(document) };
}

const TITLES = {
  400: "Bad Request",
  404: "Not Found",
  409: "Conflict",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  503: "Service Unavailable",
};

export function problem(status, slug, detail, extra = {}) {
  return { type: `/problems/${slug}`, title: TITLES[status] ?? "Error", status, detail, ...extra };
}

/** A run as the server answers it (the required members). */
export function runDocument(status = "queued", runId = randomUUID()) {
  return {
    id: runId,
    tenant: "default",
    status,
    crew_name: "research",
    inputs: { topic: "tides" },
    metadata: {},
    created_at: "2026-01-02T03:04:05.123456Z",
    attempt: 0,
    tasks: [],
    fake_llm: true,
    usage: { llm_calls: 0, prompt_tokens: 0, completion_tokens: 0, tool_calls: 0 },
    links: { self: `/v1/runs/${runId}`, events: `/v1/runs/${runId}/events` },
  };
}

export function envelope(seq, type, data = {}, runId = "r1") {
  const document = { run_id: runId, type, at: "2026-01-02T03:04:05Z", task: null, agent: null, data };
  if (seq !== null) document.seq = seq;
  return document;
}

/** One SSE message of an event, as agentd writes it. */
export function sseEvent(seq, type, data = {}) {
  return `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(envelope(seq, type, data))}\n\n`;
}

export function sseReply(pieces, pause = 0) {
  return { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache" }, pieces, pause };
}

export const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `body` with a stub server of this script, stopped afterwards. */
export async function withStub(script, body) {
  const server = await stub(script);
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}
