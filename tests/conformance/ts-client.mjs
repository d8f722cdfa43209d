// A command-line MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk, Streamable
// HTTP, pinned by package-lock.json), which the end-to-end tests spawn against agentd's /mcp:
//
//   node ts-client.mjs --url URL [--key KEY] list             {"tools": [Tool, ...]}
//   node ts-client.mjs --url URL [--key KEY] call TOOL ARGS [--progress]
//                                                             {"progress": p, "message": m} per
//                                                             progress notification (with
//                                                             --progress), then
//                                                             {"result": CallToolResult}
//
// Without --progress the call's stream carries no event but the priming event (an id, a retry,
// an empty data field) until its result: the only id the SDK can resume from.
//
// Every stream the SDK resumes by itself (a GET with Last-Event-ID after a POST stream broke) is
// a line too: {"resumed": {"last_event_id": id, "status": http status}}. Outcomes are lines and
// exit 0: {"error": {"code", "message"}} (an MCP error), {"http_error": status} (a refusal
// without a JSON-RPC body). Anything else: {"crash": "..."} and exit 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");

function parse(argv) {
  const options = { url: null, key: null, progress: false, command: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--url") options.url = argv[++i];
    else if (argv[i] === "--key") options.key = argv[++i];
    else if (argv[i] === "--progress") options.progress = true;
    else options.command.push(argv[i]);
  }
  if (!options.url || options.command.length === 0) throw new Error("usage: --url URL [--key KEY] list|call TOOL ARGS");
  return options;
}

async function main() {
  const options = parse(process.argv.slice(2));
  const headers = options.key ? { Authorization: `Bearer ${options.key}` } : {};
  // Watch the SDK's own requests: a GET with Last-Event-ID is it resuming a broken stream.
  const watched = async (input, init) => {
    const response = await fetch(input, init);
    const sent = new Headers(init?.headers);
    const last = sent.get("last-event-id");
    if ((init?.method ?? "GET") === "GET" && last) {
      emit({ resumed: { last_event_id: last, status: response.status } });
    }
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers },
    fetch: watched,
  });
  const client = new Client({ name: "agentd-tests-ts", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (error) {
    if (error?.code >= 400) return emit({ http_error: error.code });
    throw error;
  }
  const [command, ...rest] = options.command;
  try {
    if (command === "list") {
      emit({ tools: (await client.listTools()).tools });
    } else if (command === "call") {
      const [name, args] = rest;
      const result = await client.callTool(
        { name, arguments: JSON.parse(args ?? "{}") },
        undefined,
        options.progress
          ? {
              onprogress: (progress) => emit({ progress: progress.progress, message: progress.message }),
              timeout: 120_000,
              resetTimeoutOnProgress: true,
            }
          : { timeout: 120_000 },
      );
      emit({ result });
    } else {
      throw new Error(`unknown command ${command}`);
    }
  } catch (error) {
    if (typeof error?.code === "number" && error.code < 0) {
      emit({ error: { code: error.code, message: error.message, data: error.data } });
    } else if (typeof error?.code === "number") {
      emit({ http_error: error.code });
    } else {
      throw error;
    }
  } finally {
    await client.close().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    emit({ crash: String(error?.stack ?? error) });
    process.exit(1);
  },
);
