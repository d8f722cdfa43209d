// Type-level checks of the public API (compiled by `npm run typecheck`, never run): what a caller
// writes type-checks, and what it must not write does not.
import {
  Agentd,
  ProblemError,
  ValidationError,
  WebhookVerificationError,
  verifyWebhook,
  type CrewSpec,
  type LlmDelta,
  type Run,
  type RunEvent,
} from "../src/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

export async function usage(agentd: Agentd, crew: CrewSpec): Promise<void> {
  const run: Run = await agentd.kickoffAndWait(crew, { topic: "tides" }, {
    timeoutMs: 60_000,
    metadata: { ticket: "T-1" },
    onKickoff: (started, key) => void [started.id, key.length],
  });
  expectType<Equal<typeof run.status, "queued" | "waiting" | "running" | "awaiting_input" | "completed" | "failed" | "cancelling" | "cancelled">>();

  // @ts-expect-error: not a kickoff member
  await agentd.kickoff("research", {}, { timeout_seconds: 5 });

  for await (const event of agentd.events(run.id, { lastEventId: 3, onReconnect: (id) => void id })) {
    expectType<Equal<typeof event, RunEvent>>();
    if (event.type === "tool.approval_requested") {
      const id: string = event.data.tool_call_id;
      await agentd.approveToolCall(run.id, id, { reason: "checked" });
    }
    if (event.type === "run.failed") {
      const kind: string = event.data.error.kind;
      void kind;
    }
  }
  for await (const event of agentd.events(run.id, { includeDeltas: true })) {
    expectType<Equal<typeof event, RunEvent | LlmDelta>>();
    if (event.type === "llm.delta") void event.data.text;
  }

  try {
    await agentd.getRun(run.id);
  } catch (error) {
    if (error instanceof ValidationError) {
      for (const field of error.errors) void [field.field, field.message];
    }
    if (error instanceof ProblemError) void [error.status, error.type, error.retryAfter];
  }

  const { data } = await agentd.api.GET("/v1/crews");
  void data;

  try {
    const event: RunEvent = verifyWebhook("whsec_AAAA", { "webhook-id": "x" }, "{}");
    void event.seq;
  } catch (error) {
    if (error instanceof WebhookVerificationError) void error.message;
  }
}
