/**
 * Names for the schemas of agentd's OpenAPI document that the client's API uses. Every other
 * schema is in `components["schemas"]` of the generated module (exported as `components`).
 */

import type { components } from "./generated/schema.js";

type Schemas = components["schemas"];

/** A run as the API returns it. */
export type Run = Schemas["Run"];
/** Where a run is in its life. */
export type RunStatus = Schemas["RunStatus"];
/**
 * One event of a run's log, as the envelope `{seq, run_id, type, at, task, agent, data}`; `type`
 * discriminates `data` (`if (event.type === "tool.approval_requested") event.data.tool_call_id`).
 */
export type RunEvent = Schemas["Event"];
/** The type of a run's event (`run.completed`, `tool.approval_requested`, ...). */
export type RunEventType = RunEvent["type"];
/** The `crew` of a kickoff: a crew spec, or the name of a registered crew. */
export type CrewRef = Schemas["CrewRef"];
/** A crew spec. */
export type CrewSpec = Schemas["CrewSpec"];
/** Values for a crew's `{placeholders}` (any JSON but `null`). */
export type Inputs = Schemas["Inputs"];
/** The body of `POST /v1/kickoffs`. */
export type KickoffRequest = Schemas["KickoffRequest"];
/** The members of a kickoff besides `crew` and `inputs` (`metadata`, `timeout_s`, `stream`, `webhooks`, ...). */
export type KickoffFields = Omit<KickoffRequest, "crew" | "inputs">;
/** The body of `POST /v1/kickoffs/batch`. */
export type BatchKickoffRequest = Schemas["BatchKickoffRequest"];
/** The members of a batch kickoff besides `crew` and `inputs`. */
export type BatchKickoffFields = Omit<BatchKickoffRequest, "crew" | "inputs">;
/** The body of a decision on a tool call that awaits approval. */
export type ApprovalRequest = Schemas["ApprovalRequest"];
/** One offending field of a request: `crew.tasks[0].agent` and why. */
export type FieldError = Schemas["FieldError"];
/** The data of a `stream.closed` message. */
export type StreamClosed = Schemas["StreamClosed"];

/**
 * Live reply text of a streaming run (`"stream": true`): never journaled, so it has no `seq`,
 * and a reconnect does not replay the deltas it missed.
 */
export interface LlmDelta {
  readonly type: "llm.delta";
  readonly run_id: string;
  readonly at: string;
  readonly task: string | null;
  readonly agent: string | null;
  readonly data: { readonly iteration: number; readonly attempt: number; readonly text: string };
}

/** The statuses a run never leaves. */
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set<RunStatus>(["completed", "failed", "cancelled"]);
