/**
 * The TypeScript client of agentd.
 *
 * {@link Agentd}: kickoffs with idempotency keys, retries, waiting, event streams that resume
 * exactly, approvals; typed problem errors; {@link verifyWebhook}. Every other operation is on the
 * typed low-level client `agentd.api` (openapi-fetch over the generated `paths`).
 *
 * @packageDocumentation
 */

export {
  Agentd,
  type AgentdOptions,
  type ApproveOptions,
  type CallOptions,
  type EventsOptions,
  type KickoffAndWaitOptions,
  type KickoffBatchOptions,
  type KickoffHook,
  type KickoffOptions,
  type RejectOptions,
  type WaitOptions,
} from "./client.js";
export {
  AgentdConnectionError,
  AgentdError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InternalServerError,
  MethodNotAllowedError,
  NotConfiguredError,
  NotFoundError,
  PayloadTooLargeError,
  ProblemError,
  RateLimitedError,
  RequestTimeoutError,
  StreamClosedError,
  UnauthorizedError,
  UnavailableError,
  UnsupportedMediaTypeError,
  UpstreamError,
  ValidationError,
  WaitTimeoutError,
  WebhookVerificationError,
  parseRetryAfter,
  type ProblemDetails,
  type ProblemDocument,
} from "./errors.js";
export {
  DEFAULT_RECONNECT,
  TERMINAL_EVENT_TYPES,
  isTerminalEvent,
  type ReconnectHook,
  type ReconnectOptions,
  type ReconnectPolicy,
} from "./events.js";
export { DEFAULT_RETRY, type FetchLike, type RetryInfo, type RetryOptions, type RetryPolicy } from "./http.js";
export { LineSplitter, SseDecoder, type SseMessage } from "./sse.js";
export {
  TERMINAL_STATUSES,
  type ApprovalRequest,
  type BatchKickoffFields,
  type BatchKickoffRequest,
  type CrewRef,
  type CrewSpec,
  type FieldError,
  type Inputs,
  type KickoffFields,
  type KickoffRequest,
  type LlmDelta,
  type Run,
  type RunEvent,
  type RunEventType,
  type RunStatus,
  type StreamClosed,
} from "./types.js";
export { VERSION } from "./version.js";
export { verifyWebhook, type VerifyWebhookOptions, type WebhookHeaders } from "./webhooks.js";
export type { components, operations, paths } from "./generated/schema.js";
