/**
 * A decoder of server-sent events (the WHATWG "event stream interpretation"): bytes to lines
 * ({@link LineSplitter}), lines to messages ({@link SseDecoder}).
 */

/** One dispatched message. */
export interface SseMessage {
  /** The `event:` field (`message` when absent). */
  readonly event: string;
  /** The `data:` lines joined with line feeds. */
  readonly data: string;
  /** The `id:` field of this message, `undefined` when it had none. */
  readonly id: string | undefined;
}

/**
 * Splits a stream of text into lines at CRLF, LF or CR (a CR at the end of one chunk and an LF at
 * the start of the next are one line ending). Decodes UTF-8 across chunk boundaries.
 */
export class LineSplitter {
  readonly #decoder = new TextDecoder("utf-8");
  #buffer = "";
  #afterCr = false;

  /** Takes a chunk; answers the lines it completes, without their endings. */
  push(chunk: Uint8Array | string): string[] {
    let text = typeof chunk === "string" ? chunk : this.#decoder.decode(chunk, { stream: true });
    if (this.#afterCr && text.startsWith("\n")) text = text.slice(1);
    this.#afterCr = false;
    if (text === "") return [];
    const lines: string[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      lines.push(this.#buffer + text.slice(start, i));
      this.#buffer = "";
      if (c === 13) {
        if (i + 1 === text.length) this.#afterCr = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#buffer += text.slice(start);
    return lines;
  }
}

/**
 * Turns the lines of an event stream (without their endings) into messages.
 *
 * Besides the messages, it keeps what the specification calls the last event ID string
 * ({@link lastEventId}: the last `id:` field of a *complete* message, kept across messages
 * without one, so a message cut by a dropped connection does not count) and the reconnection time
 * the server last asked for ({@link retryMs}). Comments (`:` lines) are skipped.
 */
export class SseDecoder {
  lastEventId: string | undefined;
  retryMs: number | undefined;
  #idBuffer: string | undefined;
  #event = "";
  #data: string[] = [];
  #id: string | undefined;
  #firstLine = true;

  /** A decoder starting with this last event id and reconnection time (a new connection's). */
  constructor(lastEventId?: string, retryMs?: number) {
    this.lastEventId = lastEventId;
    this.retryMs = retryMs;
    this.#idBuffer = lastEventId;
  }

  /** Takes one line; answers the message it completes (a blank line ends one), if any. */
  feed(line: string): SseMessage | undefined {
    if (this.#firstLine) {
      this.#firstLine = false;
      if (line.startsWith("\ufeff")) line = line.slice(1);
    }
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (name) {
      case "event":
        this.#event = value;
        break;
      case "data":
        this.#data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) {
          this.#id = value;
          this.#idBuffer = value;
        }
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
    return undefined;
  }

  #dispatch(): SseMessage | undefined {
    this.lastEventId = this.#idBuffer;
    const message: SseMessage | undefined =
      this.#data.length > 0
        ? { event: this.#event || "message", data: this.#data.join("\n"), id: this.#id }
        : undefined;
    this.#event = "";
    this.#data = [];
    this.#id = undefined;
    return message;
  }
}
