// Following a run's events: parsing, deltas, resumption after drops, errors.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agentd, AgentdConnectionError, NotFoundError, StreamClosedError } from "../dist/index.js";
import {
  HANG_UP,
  SILENT,
  StubServer,
  envelope,
  jsonReply,
  problem,
  sseEvent,
  sseReply,
  stub,
  delay,
  withStub,
} from "./stub.mjs";

const TYPES = ["run.queued", "run.started", "task.started", "task.completed", "run.completed"];
const FAST = { initialDelayMs: 10, maxDelayMs: 50 };

function eventsFrom(after, upto = TYPES.length) {
  const pieces = [];
  for (let seq = after + 1; seq <= upto; seq++) pieces.push(sseEvent(seq, TYPES[seq - 1]));
  return pieces;
}

/** What agentd answers: the events after the request's Last-Event-ID, up to `upto`. */
function replay(request, upto = TYPES.length) {
  return sseReply(eventsFrom(Number(request.headers["last-event-id"] ?? "0"), upto));
}

async function collect(iterable) {
  const seen = [];
  for await (const event of iterable) seen.push(event);
  return seen;
}

function client(server, reconnect = FAST) {
  return new Agentd({ baseUrl: server.url, reconnect });
}

test("a whole stream with keep-alives, retry and deltas", async () => {
  const delta = `event: llm.delta\ndata: ${JSON.stringify(envelope(null, "llm.delta", { text: "Ti" }))}\n\n`;
  const pieces = ["retry: 3000\n\n", ": keep-alive\n\n", ...eventsFrom(0, 3), delta, ...eventsFrom(3)];
  await withStub([sseReply(pieces)], async (server) => {
    const events = await collect(client(server).events("r1"));
    const withDeltas = await collect(client(server).events("r1", { includeDeltas: true }));
    assert.deepEqual(
      events.map((e) => e.type),
      TYPES,
    );
    assert.deepEqual(
      events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(events[0].run_id, "r1");
    assert.deepEqual(
      withDeltas.map((e) => e.type),
      [...TYPES.slice(0, 3), "llm.delta", ...TYPES.slice(3)],
    );
    assert.equal(withDeltas[3].seq, undefined);
    assert.deepEqual(withDeltas[3].data, { text: "Ti" });
    const request = server.requests[0];
    assert.equal(request.path, "/v1/runs/r1/events");
    assert.equal(request.headers["accept"], "text/event-stream");
    assert.equal(request.headers["last-event-id"], undefined);
  });
});

test("the envelope is yielded as the server sent it", async () => {
  const sent = { ...envelope(1, "run.completed", { output: { raw: "done" } }), task: "t", agent: "a" };
  await withStub([sseReply([`id: 1\nevent: run.completed\ndata: ${JSON.stringify(sent)}\n\n`])], async (server) => {
    const [event] = await collect(client(server).events("r1"));
    assert.deepEqual(event, sent);
  });
});

test("multi-line data is one envelope, in pieces cut anywhere, with CRLF endings", async () => {
  const document = JSON.stringify(envelope(1, "run.completed"), null, 1).replaceAll("\n", "\r\ndata: ");
  const message = `id: 1\r\nevent: run.completed\r\ndata: ${document}\r\n\r\n`;
  const pieces = [];
  for (let i = 0; i < message.length; i += 7) pieces.push(message.slice(i, i + 7));
  await withStub([sseReply(pieces)], async (server) => {
    const events = await collect(client(server).events("r1"));
    assert.deepEqual(
      events.map((e) => e.seq),
      [1],
    );
  });
});

test("a dropped stream resumes after the last event, without repeats, after the server's retry", async () => {
  await withStub((request, number) => {
    if (number === 1) {
      // Drop after event 2, half-way through event 3.
      return sseReply(["retry: 200\n\n", ...eventsFrom(0, 2), sseEvent(3, TYPES[2]).slice(0, 20)]);
    }
    // The server replays from one event earlier than asked: the client must not repeat it.
    return sseReply(eventsFrom(Number(request.headers["last-event-id"]) - 1));
  }, async (server) => {
    const resumed = [];
    const events = await collect(client(server).events("r1", { onReconnect: (id) => resumed.push(id) }));
    assert.deepEqual(
      events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(server.requests[1].headers["last-event-id"], "2");
    assert.deepEqual(resumed, ["2"]);
    assert.ok(server.requests[1].at - server.requests[0].at >= 190, "waited the server's retry: 200");
  });
});

test("reconnects through resets and 5xx answers", async () => {
  await withStub((request, number) => {
    if (number === 1) return sseReply(eventsFrom(0, 1));
    if (number === 2) return HANG_UP;
    if (number === 3) return jsonReply(503, problem(503, "unavailable", "db away"), { "retry-after": "0" });
    if (number === 4) return jsonReply(502, { detail: "bad gateway" });
    return replay(request);
  }, async (server) => {
    const resumed = [];
    const events = await collect(client(server).events("r1", { onReconnect: (id) => resumed.push(id) }));
    assert.deepEqual(
      events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      server.requests.map((r) => r.headers["last-event-id"]),
      [undefined, "1", "1", "1", "1"],
    );
    assert.deepEqual(resumed, ["1"]);
  });
});

test("a refused connection is survived until the server is back", async () => {
  const first = await stub([sseReply(eventsFrom(0, 2))]);
  const port = first.port;
  const agentd = new Agentd({ baseUrl: first.url, reconnect: { initialDelayMs: 50, maxDelayMs: 100 } });
  const events = agentd.events("r1");
  const seqs = [(await events.next()).value.seq, (await events.next()).value.seq];
  await first.stop();
  let restarted;
  const restart = new Promise((resolve) =>
    setTimeout(async () => {
      restarted = await new StubServer((request) => replay(request)).start(port);
      resolve();
    }, 500),
  );
  for await (const event of events) seqs.push(event.seq);
  await restart;
  await restarted.stop();
  assert.deepEqual(seqs, [1, 2, 3, 4, 5]);
  assert.deepEqual(
    restarted.requests.map((r) => r.headers["last-event-id"]),
    ["2"],
  );
});

test("a silent connection is taken as dead after the read timeout", async () => {
  await withStub((request, number) => (number === 1 ? SILENT : replay(request)), async (server) => {
    const events = await collect(client(server, { ...FAST, readTimeoutMs: 200 }).events("r1"));
    assert.deepEqual(
      events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(server.requests.length, 2);
  });
});

test("lastEventId starts after a given seq", async () => {
  await withStub((request) => replay(request), async (server) => {
    const events = await collect(client(server).events("r1", { lastEventId: 3 }));
    assert.deepEqual(
      events.map((e) => e.seq),
      [4, 5],
    );
    assert.equal(server.requests[0].headers["last-event-id"], "3");
  });
});

test("204 No Content ends the iteration", async () => {
  await withStub([{ status: 204 }], async (server) => {
    assert.deepEqual(await collect(client(server).events("r1", { lastEventId: "9" })), []);
  });
});

test("stream.closed is thrown as StreamClosedError, without reconnecting", async () => {
  const closed =
    'event: stream.closed\ndata: {"type": "stream.closed", "reason": "key_revoked", "detail": "the key was revoked"}\n\n';
  await withStub([sseReply([...eventsFrom(0, 2), closed])], async (server) => {
    const seen = [];
    await assert.rejects(
      async () => {
        for await (const event of client(server).events("r1")) seen.push(event.seq);
      },
      (error) => error instanceof StreamClosedError && error.reason === "key_revoked",
    );
    assert.deepEqual(seen, [1, 2]);
    assert.equal(server.requests.length, 1);
  });
});

test("a client error is thrown without reconnecting", async () => {
  await withStub([jsonReply(404, problem(404, "not-found", "no run r1"))], async (server) => {
    await assert.rejects(collect(client(server).events("r1")), NotFoundError);
    assert.equal(server.requests.length, 1);
  });
});

test("reconnection attempts are bounded", async () => {
  await withStub([HANG_UP], async (server) => {
    await assert.rejects(
      collect(client(server, { maxAttempts: 3, initialDelayMs: 10 }).events("r1")),
      (error) => error instanceof AgentdConnectionError && /4 failed connections/.test(error.message),
    );
    assert.equal(server.requests.length, 4);
  });
});

test("the count of failures starts again after progress", async () => {
  // One event per connection.
  await withStub((request) => {
    const after = Number(request.headers["last-event-id"] ?? "0");
    return sseReply(eventsFrom(after, after + 1));
  }, async (server) => {
    const events = await collect(client(server, { maxAttempts: 1, initialDelayMs: 10 }).events("r1"));
    assert.deepEqual(
      events.map((e) => e.seq),
      [1, 2, 3, 4, 5],
    );
  });
});

test("leaving the loop early closes the connection", async () => {
  const keepAlives = Array.from({ length: 100 }, () => ": keep-alive\n\n");
  await withStub(() => sseReply([...eventsFrom(0, 2), ...keepAlives], 20), async (server) => {
    for await (const event of client(server).events("r1")) {
      if (event.seq === 1) break;
    }
    const closed = await Promise.race([server.requests[0].closed.then(() => true), delay(1000).then(() => false)]);
    assert.ok(closed, "the server saw the connection close");
    assert.equal(server.requests.length, 1);
  });
});

test("an abort signal ends the iteration with its reason", async () => {
  await withStub([SILENT], async (server) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("enough")), 100);
    await assert.rejects(collect(client(server).events("r1", { signal: controller.signal })), /enough/);
  });
});

test("the run id is percent-encoded and the key sent on the stream", async () => {
  await withStub([sseReply(eventsFrom(4))], async (server) => {
    const agentd = new Agentd({ baseUrl: `${server.url}/`, apiKey: "agd_stream" });
    await collect(agentd.events("a/b"));
    assert.equal(server.requests[0].rawPath, "/v1/runs/a%2Fb/events");
    assert.equal(server.requests[0].headers["authorization"], "Bearer agd_stream");
  });
});
