// The SSE decoder: line endings across chunks, fields, comments, multi-line data, ids and retry.
import assert from "node:assert/strict";
import { test } from "node:test";

import { LineSplitter, SseDecoder } from "../dist/index.js";

function decode(text, decoder = new SseDecoder()) {
  const splitter = new LineSplitter();
  const messages = [];
  for (const line of splitter.push(text)) {
    const message = decoder.feed(line);
    if (message !== undefined) messages.push(message);
  }
  return messages;
}

test("lines split at LF, CRLF and CR, also across chunks", () => {
  const splitter = new LineSplitter();
  const encoder = new TextEncoder();
  const lines = [
    ...splitter.push(encoder.encode("a\r")),
    ...splitter.push(encoder.encode("\nb\rc\n")),
    ...splitter.push(encoder.encode("d")),
    ...splitter.push(encoder.encode("e\r\n\r\n")),
  ];
  assert.deepEqual(lines, ["a", "b", "c", "de", ""]);
});

test("a multi-byte character cut between chunks is decoded whole", () => {
  const bytes = new TextEncoder().encode("data: marée\n\n");
  const splitter = new LineSplitter();
  const cut = bytes.indexOf(0xc3) + 1;
  const lines = [...splitter.push(bytes.slice(0, cut)), ...splitter.push(bytes.slice(cut))];
  assert.deepEqual(lines, ["data: marée", ""]);
});

test("fields, comments and multi-line data", () => {
  const messages = decode(
    ": keep-alive\n\nid: 7\nevent: task.started\ndata: {\"a\":\ndata:  1}\n\ndata:plain\nignored: field\n\n",
  );
  assert.deepEqual(messages, [
    { event: "task.started", data: '{"a":\n 1}', id: "7" },
    { event: "message", data: "plain", id: undefined },
  ]);
});

test("retry sets the reconnection time; a bad one is ignored", () => {
  const decoder = new SseDecoder();
  decode("retry: 500\n\nretry: soon\n\n", decoder);
  assert.equal(decoder.retryMs, 500);
});

test("the last event id counts only complete messages and survives messages without one", () => {
  const decoder = new SseDecoder();
  decode("id: 1\ndata: x\n\ndata: y\n\nid: 2\ndata: cut", decoder);
  assert.equal(decoder.lastEventId, "1");
  decode("\n", decoder);
  assert.equal(decoder.lastEventId, "2");
  decode("id: a\0b\ndata: z\n\n", decoder);
  assert.equal(decoder.lastEventId, "2");
});

test("a byte order mark on the first line is skipped, and a bare id line moves the id", () => {
  const decoder = new SseDecoder();
  const messages = decode("\ufeffdata: first\n\nid: 9\n\n", decoder);
  assert.deepEqual(messages, [{ event: "message", data: "first", id: undefined }]);
  assert.equal(decoder.lastEventId, "9");
});
