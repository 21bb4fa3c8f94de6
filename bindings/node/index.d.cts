// Type declarations for omprpc (Node binding over the omprpc C ABI).
/// <reference types="node" />

import { EventEmitter } from 'node:events';
import type {
  AgentMessage,
  AnyEvent,
  AssistantMessage,
  HostToolCallEvent,
  HostUriRequestEvent,
  KnownEventMap,
  KnownEventType,
  ProtocolCommands,
  Usage,
} from './protocol.gen.js';

/**
 * The typed protocol, generated from src/protocol/table.json (`make generate`): the commands'
 * options and results, an interface per event (`AgentEndEvent`, …) and UI request
 * (`UiConfirmRequest`, …), the unions `KnownEvent` / `AnyEvent` and `KnownUiRequest` /
 * `AnyUiRequest`, the guards `isKnownEvent()` / `isKnownUiRequest()` and the named types.
 */
export * from './protocol.gen.js';

/** The C ABI version this binding needs (`OMPRPC_ABI_VERSION`). */
export declare const ABI_VERSION: number;
/** Timeout value: wait without a deadline (`null` and `Infinity` mean the same). */
export declare const TIMEOUT_INFINITE: -1;
/** Timeout value: the client's configured default for that kind of call. */
export declare const TIMEOUT_DEFAULT: -2;
/** Longest single blocking poll handed to a libuv pool thread, in ms. */
export declare const POLL_SLICE_MS: number;

/** `omprpc_status` (include/omprpc.h): tests/generated.rs holds this block to the header's enum (`make generate` rewrites it). */
export declare const Status: Readonly<{
  OK: 0;
  INVALID_ARGUMENT: 1;
  INVALID_JSON: 2;
  INVALID_UTF8: 3;
  TIMEOUT: 4;
  COMMAND_FAILED: 5;
  PROCESS_EXITED: 6;
  CLOSED: 7;
  CONCURRENCY: 8;
  PROTOCOL: 9;
  IO: 10;
  NOT_FOUND: 11;
  CANCELLED: 12;
  LIMIT_EXCEEDED: 13;
  PANIC: 14;
}>;
export type StatusCode = (typeof Status)[keyof typeof Status];
export type StatusName = keyof typeof Status;

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** The core's error object, as sent with every failed call. */
export interface ErrorDetails {
  code: StatusName | string;
  status: number;
  message: string;
  command?: string;
  error?: string;
  errorCode?: string;
  [key: string]: unknown;
}

export declare class OmprpcError extends Error {
  /** The numeric `omprpc_status`. */
  readonly status: number;
  /** The status name: "TIMEOUT", "CLOSED", … */
  readonly code: StatusName | string;
  /** The core's whole error object. */
  readonly details: ErrorDetails;
}
export declare class InvalidArgumentError extends OmprpcError {}
export declare class InvalidJsonError extends OmprpcError {}
export declare class InvalidUtf8Error extends OmprpcError {}
/**
 * A deadline passed (`timeoutMs`, a start or turn timeout). Not named TimeoutError, which is
 * the DOMException `AbortSignal.timeout()` aborts with.
 */
export declare class RpcTimeoutError extends OmprpcError {}
/** @deprecated the old name of RpcTimeoutError (the same class). */
export declare const TimeoutError: typeof RpcTimeoutError;
/** @deprecated the old name of RpcTimeoutError (the same class). */
export type TimeoutError = RpcTimeoutError;
/** The agent answered `success:false` (also a late prompt failure). */
export declare class CommandError extends OmprpcError {
  /** The command that failed ("prompt", "get_state", …). */
  readonly command: string | undefined;
  /** The agent's error text. */
  readonly error: string | undefined;
  /** The agent's error code, when it sent one. */
  readonly errorCode: string | undefined;
}
export declare class ProcessExitedError extends OmprpcError {}
export declare class ClosedError extends OmprpcError {}
export declare class ConcurrencyError extends OmprpcError {}
export declare class ProtocolError extends OmprpcError {}
export declare class IoError extends OmprpcError {}
export declare class NotFoundError extends OmprpcError {}
export declare class CancelledError extends OmprpcError {}
/**
 * A call given up to its `signal` (status CANCELLED, `name` "AbortError"). `cause` is the
 * signal's reason (for `AbortSignal.timeout()`, the DOM's TimeoutError).
 */
export declare class AbortError extends CancelledError {
  readonly name: 'AbortError';
  readonly cause: unknown;
}
export declare class LimitExceededError extends OmprpcError {}
export declare class PanicError extends OmprpcError {}

/** A host tool as registered with the agent. */
export interface HostToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments. */
  parameters: JsonObject;
  label?: string;
  hidden?: boolean;
  loadMode?: string;
  [key: string]: unknown;
}

/** A host tool result: text, or `{content, details?}`. Other values are sent as JSON text. */
export type HostToolResult = string | { content: Json[]; details?: Json } | Json | undefined | void;

export interface HostToolContext {
  /** The host call id (`host_tool_call.id`). */
  callId: string;
  /** The agent's tool call id (`toolCallId`). */
  toolCallId: string;
  toolName: string;
  /** Aborted on `host_tool_cancel` and on close(). */
  signal: AbortSignal;
  /** Streams a partial result; false when the call is no longer open. */
  update(partial: HostToolResult): boolean;
  /** The `host_tool_call` event, verbatim. */
  event: HostToolCallEvent;
  client: Client;
}

export interface HostTool<Args = JsonObject> extends HostToolSpec {
  /** A method, so a handler may declare its arguments' shape (`(args: { message: string }) => …`). */
  handler?(args: Args, ctx: HostToolContext): HostToolResult | Promise<HostToolResult>;
}

export interface HostUriSchemeSpec {
  scheme: string;
  description?: string;
  writable?: boolean;
  immutable?: boolean;
  [key: string]: unknown;
}

/** `{content, contentType?, notes?, immutable?}` for a read, `{}` for a write, `{error}`. */
export type HostUriResult =
  | { content: string; contentType?: string; notes?: Json; immutable?: boolean }
  | { error: string }
  | Record<string, never>
  | string
  | undefined
  | void;

export interface HostUriContext {
  requestId: string;
  /** Aborted on `host_uri_cancel` and on close(). */
  signal: AbortSignal;
  event: HostUriRequestEvent;
  client: Client;
}

export interface HostUriScheme extends HostUriSchemeSpec {
  handler?: (request: HostUriRequestEvent, ctx: HostUriContext) => HostUriResult | Promise<HostUriResult>;
}

/** Headless UI answers: a null value cancels that kind of request. */
export interface UiPolicy {
  confirm?: boolean | null;
  select?: string | null;
  input?: string | null;
  editor?: string | null;
}

/**
 * Start options: the C keys of docs/c-api.md. Top-level keys may also be written in
 * camelCase (`maxEventHistory`), converted to snake_case; nested values are sent as given.
 */
/**
 * The start options (docs/c-api.md's, in camelCase: one spelling per option). An unknown or
 * snake_case key is a TypeError at run time too, naming it.
 */
export interface StartOptions {
  command?: string[];
  executable?: string;
  flavor?: 'auto' | 'omp' | 'pi';
  /** `"auto"` (probe the agent), `"X.Y.Z"` (pin it, no probe) or `"unchecked"`. */
  agentVersion?: string;
  /** omp only: `--approval-mode`; unset, the agent's own setting applies. */
  approvalMode?: 'always-ask' | 'write' | 'yolo';
  /** Every `response` frame is queued as an event too (a tap on every frame). */
  queueResponses?: boolean;
  provider?: string;
  model?: string;
  sessionDir?: string;
  thinking?: string;
  systemPrompt?: string;
  appendSystemPrompt?: string;
  providerSessionId?: string;
  tools?: string[];
  noSession?: boolean;
  noSkills?: boolean;
  /** The skills to load (conflicts with `noSkills: true` unless `"none"`); see `skillsFlags`. */
  skills?: SkillsSelection;
  /** Sanitize the start's host tools' parameter schemas (see `sanitizeSchema`). */
  sanitizeToolSchemas?: boolean;
  /**
   * Load the repository's own resources (`.pi/extensions`, `.pi/settings.json`, `.pi/mcp.json` …).
   * Unset or false on pi keeps them out (`--no-approve` from pi 0.79, discovery off before); on omp
   * unset leaves its discovery and false passes `--no-extensions`. docs/agents.md.
   */
  trustProject?: boolean;
  /** Let pi's MCP configuration load (pi 0.99 on). Unset or false: no MCP server starts (`--no-mcp`). */
  mcp?: boolean;
  /** false keeps `AGENTS.md` / `CLAUDE.md` out (pi 0.67.4 on). */
  contextFiles?: boolean;
  /** Tools taken away (pi 0.77 on; `*` patterns from 1.0.4). */
  excludeTools?: string[];
  noRules?: boolean;
  noTitle?: boolean | null;
  rpcDefaults?: boolean;
  extensions?: string[];
  extraArgs?: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** `true`: all of this process's environment; `"allowlist"`: only what an agent needs. */
  inheritEnv?: boolean | 'allowlist';
  envPassthrough?: string[];
  systemPromptViaFile?: boolean;
  /** An argv prefix the agent runs behind: a sandbox (`bwrap`, `unshare`, `ip netns exec`)
   * or another host (`ssh -T host`, `docker exec -i ctr`, `kubectl exec -i pod --`);
   * docs/launcher.md says what close means through each. */
  launcher?: string[];
  /** `"process"`: the launcher hands its environment on; `"command"`: `env` and `cwd` travel
   * as an `env -C DIR NAME=VALUE …` prefix (the default for ssh, docker, podman, kubectl, sudo). */
  launcherEnv?: 'auto' | 'process' | 'command';
  /** Quote each word for the far side's shell (default: on for ssh only). */
  launcherShell?: boolean;
  /** Records every frame, both directions, to this JSONL file (0600; it holds prompts and
   * tool output); `omprpc-fake-agent --replay FILE` plays it back. */
  recordPath?: string;
  handshake?: 'ready' | 'probe' | 'none';
  startupTimeoutMs?: number;
  requestTimeoutMs?: number;
  turnTimeoutMs?: number | null;
  maxEventHistory?: number | null;
  maxStderrLines?: number | null;
  maxFrameBytes?: number | null;
  maxOutboundFrameBytes?: number | null;
  eventQueueCapacity?: number;
  eventQueueMaxBytes?: number;
  maxTurnBytes?: number | null;
  turnEvents?: 'all' | 'no_updates' | 'none';
  turnSummary?: boolean;
  /** Keep log records at this level and above for `nextLogs()` (default: off). */
  logLevel?: LogLevel | 'off';
  logQueueCapacity?: number | null;
  turnIdleTimeoutMs?: number | null;
  /** Queue a `prompt_complete` event (`PromptCompleteEvent`) when a prompt completes (default false). */
  promptCompleteEvents?: boolean;
  /** How long the agent must be quiet before a waiter asks `get_state` whether it is idle (250). */
  activityProbeMs?: number;
  bridge?: 'auto' | 'always' | 'never';
  bridgeTransport?: 'unix' | 'tcp';
  /** The `IP:port` the bridge binds (TCP; default `127.0.0.1:0`). Either address selects TCP. */
  bridgeListen?: string;
  /** The `host:port` the extension dials (default: the bound address; port 0: the bound port). */
  bridgeAdvertise?: string;
  hostToolTimeoutMs?: number;
  /** The gate over the agent's own tools; in host mode a `handler` may answer `policy_eval`. */
  toolPolicy?: ToolPolicy;
  stopGraceMs?: number;
  killGraceMs?: number;
  negotiateV2?: boolean;
  invalidFrames?: 'fatal' | 'skip';
  /** Registered during start; entries may carry a `handler`. */
  hostTools?: HostTool[];
  hostUriSchemes?: HostUriScheme[];
  uiPolicy?: UiPolicy | null;
  /** Binding only: close the agent synchronously if the process exits with it open (default true). */
  closeOnExit?: boolean;
  /** Binding only: whether awaiting events keeps the process alive (default true; see unref()). */
  ref?: boolean;
  /** Binding only: load the library from this path (only before the first load). */
  libraryPath?: string;
  /** Binding only: aborts the start (AbortError); the agent, once started, is stopped. */
  signal?: AbortSignal;
}

export type PolicyVerdict = boolean | { allow: boolean; reason?: string };

export interface PolicyEvalEvent extends AgentEvent {
  type: 'policy_eval';
  id: string;
  toolName: string;
  toolCallId: string;
  arguments: unknown;
  /** The call that made this one (pi 0.99+: a codemode script's call); absent for the model's. */
  parentToolCallId?: string;
}

export interface PolicyContext {
  requestId: string;
  toolName: string;
  toolCallId: string;
  event: PolicyEvalEvent;
  client: Client;
}

export type PolicyHandler = (event: PolicyEvalEvent, ctx: PolicyContext) => PolicyVerdict | Promise<PolicyVerdict>;

export interface ToolPolicy {
  mode: 'host' | 'rules';
  allow?: string[];
  block?: Record<string, string>;
  default?: 'allow' | 'block';
  timeout_ms?: number;
  fail_open?: boolean;
  /** Binding only (host mode): answers each `policy_eval`. */
  handler?: PolicyHandler;
  [key: string]: unknown;
}

/** Prompt content blocks (`omprpc_prompt_from_content`). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; path?: string; data_uri?: string }
  | { type: 'file'; path?: string; data_uri?: string; text?: string; name?: string };

export interface CallOptions {
  /** ms; undefined: the client's default; null / Infinity / -1: no deadline. */
  timeoutMs?: number | null;
  /**
   * Rejects the call at once with an AbortError (`cause`: the signal's reason). A turn
   * (`promptAndWait`, `stream`) is aborted too: `abort` is sent, and the client's next prompt
   * starts once the aborted one completed.
   */
  signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {}

export interface ImageContent {
  type: 'image';
  data: string;
  mimeType: string;
  [key: string]: unknown;
}

export interface PromptOptions extends CallOptions {
  images?: ImageContent[];
  streamingBehavior?: 'steer' | 'followUp';
  /** Blocks appended to the message (images checked, text files inlined). */
  content?: ContentBlock[];
  [key: string]: unknown;
}

export interface PromptAndWaitOptions extends PromptOptions {
  /**
   * Aborts the agent's work: `abort` is sent and the call rejects at once with an AbortError
   * (the turn is dropped). The client's next prompt, `promptAndWait`, `collectEvents`
   * or `waitForIdle` starts once the library completed the aborted prompt.
   */
  signal?: AbortSignal;
}

export interface StreamOptions {
  images?: ImageContent[];
  /** Blocks appended to the message (images checked, text files inlined). */
  content?: ContentBlock[];
  /** The prompt's acknowledgement (ms); for the whole turn use `signal: AbortSignal.timeout(ms)`. */
  timeoutMs?: number | null;
  /** Aborts the turn: `abort` is sent, the iteration rejects with an AbortError. */
  signal?: AbortSignal;
}

/** A piece of the assistant's visible text (text deltas only), in arrival order. */
export interface TextItem { kind: 'text'; text: string }
/** A piece of the assistant's reasoning (thinking), in arrival order. */
export interface ReasoningItem { kind: 'reasoning'; text: string }
/** The agent started a tool call (its own tool or a host tool). */
export interface ToolStartItem { kind: 'tool_start'; toolCallId: string; toolName: string; args: unknown }
/** A tool call ended; `outcome` "success", "error" or "blocked" (by the policy gate: `reason`). */
export interface ToolEndItem {
  kind: 'tool_end';
  toolCallId: string;
  toolName: string;
  outcome: 'success' | 'error' | 'blocked' | (string & {});
  result: unknown;
  reason: string | null;
}
/** The attempt failed; the agent retries by itself after `delayMs` (the turn goes on). */
export interface RetryItem { kind: 'retry'; attempt: number | null; maxAttempts: number | null; delayMs: number | null; error: string | null }
/** A compaction inside the turn ended (`reason` "overflow": `willRetry` says the agent retries). */
export interface CompactionItem { kind: 'compaction'; reason: string | null; aborted: boolean; willRetry: boolean; errorMessage: string | null }
/** The prompt completed (always the last item): where the library says the agent will not go on. */
export interface TurnComplete {
  kind: 'turn_complete';
  requestId: string;
  outcome: TurnOutcome;
  /** The last assistant message's ("stop", "toolUse", "aborted", "error", "length", …). */
  stopReason: string | null;
  /** Summed over the turn's LLM calls. */
  usage: TurnSummary['usage'];
  /** The final assistant text. */
  text: string | null;
  /** The library's whole summary of the turn. */
  summary: TurnSummary;
  attempts: number;
  failedAttempts: FailedAttempt[];
  compactions: Compaction[];
}
/** What `client.stream()` yields: switch on `kind`. */
export type StreamItem = TextItem | ReasoningItem | ToolStartItem | ToolEndItem | RetryItem | CompactionItem | TurnComplete;

/** One turn, streamed (`client.stream()`). Leaving it early (`break`, close()) aborts the turn. */
export declare class TurnStream implements AsyncIterableIterator<StreamItem> {
  next(): Promise<IteratorResult<StreamItem, undefined>>;
  return(): Promise<IteratorResult<StreamItem, undefined>>;
  [Symbol.asyncIterator](): TurnStream;
  /** Reads the rest of the stream; resolves its turn_complete item (also once read). */
  finalTurn(): Promise<TurnComplete>;
  /** Leaves the stream (like `break`): an unfinished turn is aborted. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface MessageOptions extends CallOptions {
  images?: ImageContent[];
  [key: string]: unknown;
}

/**
 * Any event: agent frames verbatim, plus omprpc's synthetic ones (`omprpc: true`). Its members
 * are `unknown` until narrowed: `isKnownEvent(ev)` narrows it to the generated `KnownEvent` union, on which
 * `switch (ev.type)` narrows to one event's interface.
 */
export interface AgentEvent {
  type: string;
  [key: string]: unknown;
}

/**
 * The library's `prompt_complete` event (start option `promptCompleteEvents`): a prompt
 * completed, where its turn would (`outcome` as `Turn.outcome`), or `'failed'` (refused,
 * unsent, or a late failure: `error`).
 */
export interface PromptCompleteEvent extends AgentEvent {
  type: 'prompt_complete';
  omprpc: true;
  requestId: string;
  outcome: TurnOutcome | 'failed';
  agentInvoked: boolean;
  error?: ErrorDetails;
}

export interface UiRequest extends AgentEvent {
  type: 'extension_ui_request';
  id: string;
  method: string;
  title?: string;
  message?: string;
  placeholder?: string;
  options?: string[];
}

/**
 * The completed prompt, as assembled by the core. It ends where the agent says it will not go
 * on (`agent_settled` from pi 0.80.4), or, for an agent that does not say so (omp, older pi),
 * at the last run's terminal `agent_end`: a failed run the agent retries, or recovers from by
 * an overflow compaction, does not end it. Every run in between is in the turn.
 */
export interface Turn {
  requestId: string;
  /** How the prompt completed (the library decides; see `TurnOutcome`). */
  outcome: TurnOutcome;
  agentInvoked: boolean;
  /**
   * The attempts the agent made at the prompt: 1, plus one per retry (`auto_retry_start`) and
   * per overflow compaction it retried after; 0 when nothing ran.
   */
  attempts: number;
  /** The agent said it settled (`agent_settled`). */
  settled: boolean;
  /** The attempts that failed, oldest first, each with what the agent did next. */
  failedAttempts: FailedAttempt[];
  /** The compactions inside the turn, oldest first. */
  compactions: Compaction[];
  /**
   * Every run's messages, oldest run first (a failed attempt's error message too; a compacted
   * agent_end rebuilt; pi 1.x lists a `system` message first in a run).
   */
  messages: AgentMessage[];
  /** The last assistant message (after a retry: the answer's). */
  assistantMessage: AssistantMessage | null;
  assistantText: string | null;
  promptResult: { [key: string]: unknown } | null;
  /**
   * Every event of the turn, in order (per `turn_events`). Each event is parsed on its first
   * use: `ev.type` is the library's (read without parsing the event); any other use (a field, `in`, keys, spread,
   * JSON.stringify, util.inspect) parses that event, once. The events are Proxies over
   * plain objects: `structuredClone` / `postMessage` need a copy (`{ ...ev }`).
   */
  events: AgentEvent[];
  /** With the `turn_summary` option. */
  summary?: TurnSummary;
  /**
   * The last assistant message's `stopReason` (`'stop'`, `'toolUse'`, `'error'`, `'aborted'`, …);
   * null without one. This and the members below are not enumerable: the object's own keys
   * (spread, `JSON.stringify`) are the core's turn JSON.
   */
  stopReason: string | null;
  /** The last assistant message's `errorMessage` (a failed LLM call); null without one. */
  errorMessage: string | null;
  /** The last assistant message's `usage` object, as the agent sent it; null without one. */
  usage: Usage | null;
}

/**
 * How a prompt completed (`omprpc_turn_outcome`):
 * - `'agent_settled'`: the agent said it settled (`agent_settled {aborted:false}`, pi 0.80.4 on),
 *   after however many runs;
 * - `'agent_end'`: the last run's terminal `agent_end`, and the agent did not go on by itself
 *   (agents that do not announce settling: omp, pi before 0.80.4);
 * - `'aborted'`: `agent_settled {aborted:true}`, a retry aborted in its delay, or a last run
 *   that stopped `aborted`;
 * - `'prompt_result'`: omp's `prompt_result` answered it (a command that ran no agent loop);
 * - `'not_invoked'`: nothing ran (`agentInvoked: false`, `disposition: "handled"`).
 */
export type TurnOutcome = 'agent_end' | 'agent_settled' | 'aborted' | 'prompt_result' | 'not_invoked';

/**
 * What the agent did after a failed attempt: `'retry'` (after `delayMs`), `'compaction'` (an
 * overflow compaction), `'gave_up'` (its retries ran out), `'cancelled'` (a retry aborted in its
 * delay), `'none'` (nothing).
 */
export type FailedAttemptThen = 'retry' | 'compaction' | 'gave_up' | 'cancelled' | 'none';

/** One failed attempt at a prompt. */
export interface FailedAttempt {
  /** Which attempt (1 is the prompt's first run). */
  attempt: number;
  /** The error, as the agent gave it (`"500: …"`); null when it gave none. */
  error: string | null;
  then: FailedAttemptThen;
  /** The delay before the retry (`then: 'retry'`), in whole ms. */
  delayMs?: number;
}

/** A compaction inside a turn (`compaction_*` on pi, `auto_compaction_*` on omp). */
export interface Compaction {
  /** Why it ran: `'overflow'` (the context did not fit: a recovery), `'threshold'`, … */
  reason: 'overflow' | 'threshold' | 'manual' | (string & {});
  /** null while it had not ended when the turn did. */
  aborted: boolean | null;
  /** The agent retried the prompt after it; null while it had not ended. */
  willRetry: boolean | null;
  errorMessage: string | null;
}

export interface TurnSummary {
  complete: boolean;
  text: string;
  finalText: string | null;
  reasoning: string;
  chunks: { kind: 'text' | 'reasoning'; text: string }[];
  /**
   * Each tool call, start and end paired by `toolCallId`, in start order. Calls another tool
   * made (pi 0.99 on: a codemode script's inner calls) are items too: `parentToolCallId` names
   * the call that made one (null for a call of the model), and that call's `children` lists
   * their ids, so the list renders as a tree.
   */
  toolCalls: {
    toolCallId: string;
    toolName: string;
    args: unknown;
    outcome: 'success' | 'error' | 'blocked' | 'pending' | string;
    result?: unknown;
    reason?: string;
    parentToolCallId: string | null;
    children: string[];
  }[];
  stopReason: string | null;
  stopReasons: string[];
  usage: {
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    totalTokens: number;
    cost: number;
    contextTokens: number;
    model: string | null;
    calls: number;
    [key: string]: unknown;
  } | null;
  messageUsage: { [key: string]: unknown }[];
  /** The attempts at the prompt (as `Turn.attempts`), its failed attempts and compactions. */
  attempts: number;
  failedAttempts: FailedAttempt[];
  compactions: Compaction[];
  [key: string]: unknown;
}

export interface BashResult {
  output: string;
  exitCode: number;
  cancelled: boolean;
  truncated: boolean;
  [key: string]: unknown;
}

export interface ClientInfo {
  pid: number;
  argv: string[];
  /** The argv prefix the agent runs behind (`null` without one); `argv` includes it. */
  launcher: string[] | null;
  /** Where the tool bridge listens (`null` without one). */
  bridgeEndpoint: { transport: 'unix'; socket: string } | { transport: 'tcp'; listen: string; advertise: string } | null;
  flavor: 'omp' | 'pi';
  protocolVersion: number;
  ready: unknown;
  closed: boolean;
  closeReason: unknown;
  [key: string]: unknown;
}

export interface EventsOptions {
  /** Ends the iteration (rejects the pending next() with the reason). */
  signal?: AbortSignal;
  /** Only events of these types. */
  types?: string[];
  /**
   * The most unread events it keeps (default 65536): past it the oldest are dropped and the
   * next item is an `event_overflow` saying how many. It never holds back other consumers.
   */
  highWaterMark?: number;
}

/**
 * What an `events()` iterator yields where it dropped events (past its `highWaterMark`, or the
 * library's queue past its bound): how many, at the place they went missing.
 */
export interface EventOverflow {
  type: 'event_overflow';
  dropped: number;
  omprpc: true;
}

/** Iterates events of type E (`events({types})` narrows E to those types' interfaces). */
export declare class EventIterator<E extends AgentEvent | AnyEvent | EventOverflow = AnyEvent> implements AsyncIterableIterator<E> {
  next(): Promise<IteratorResult<E, undefined>>;
  return(): Promise<IteratorResult<E, undefined>>;
  /** Detaches it now (as `break` does). */
  close(): void;
  [Symbol.dispose](): void;
  [Symbol.asyncIterator](): EventIterator<E>;
}

export interface ClientEvents {
  /** Every event. */
  event: [ev: AgentEvent];
  /** After close(): the close reason, if the core recorded one. */
  close: [reason: unknown];
  /** The event pump failed (e.g. PANIC). */
  error: [err: Error];
}

export declare class Client extends EventEmitter {
  /** Spawns the agent and waits for its handshake (off the main thread). */
  static start(options?: StartOptions): Promise<Client>;
  private constructor();

  /** True once close() was called. */
  readonly closed: boolean;

  request<T = unknown>(type: string, params?: JsonObject | null, opts?: CallOptions): Promise<T>;
  sendFrame(frame: JsonObject | string): void;
  prompt(message: string, opts?: PromptOptions): Promise<string>;
  abortAndPrompt(message: string, opts?: PromptOptions): Promise<string>;
  /**
   * Prompts and streams the turn as typed items (text, reasoning, tool calls, retries,
   * compactions), the last a `turn_complete`. One stream at a time per client.
   */
  stream(message: string, opts?: StreamOptions): TurnStream;
  /**
   * Prompts and resolves the turn once the agent's work for it ended (see `Turn`). Holds a
   * libuv pool thread only until the agent acknowledged the prompt; then it polls the core
   * for the turn on the main thread, so it holds none while the agent works (as `stream()`),
   * and takes none of the client's events: they wait in the core's queue, and a listener or
   * iterator added during the wait also gets those queued before it.
   */
  promptAndWait(message: string, opts?: PromptAndWaitOptions): Promise<Turn>;
  steer(message: string, opts?: MessageOptions): Promise<void>;
  followUp(message: string, opts?: MessageOptions): Promise<void>;
  abort(opts?: CallOptions): Promise<void>;
  /** Events from now until the agent's work ends (as a turn ends). */
  collectEvents(opts?: CallOptions): Promise<AgentEvent[]>;
  waitForIdle(opts?: WaitOptions): Promise<void>;
  nextEvent(opts?: WaitOptions): Promise<AgentEvent>;
  nextUiRequest(opts?: WaitOptions): Promise<UiRequest>;
  uiSendValue(requestId: string, value: string): void;
  uiSendConfirmation(requestId: string, confirmed: boolean): void;
  uiCancel(requestId: string, opts?: { timedOut?: boolean }): void;
  setUiPolicy(policy: UiPolicy | null): void;

  setHostTools(tools: HostTool[], opts?: CallOptions): Promise<{ toolNames: string[] }>;
  registerHostTool<Args = JsonObject>(tool: HostTool<Args>, opts?: CallOptions): Promise<{ toolNames: string[] }>;
  unregisterHostTool(name: string, opts?: CallOptions): Promise<{ toolNames: string[] }>;
  setHostUriSchemes(schemes: (HostUriScheme | string)[], opts?: CallOptions): Promise<{ schemes: string[] }>;
  registerHostUriScheme(scheme: HostUriScheme, opts?: CallOptions): Promise<{ schemes: string[] }>;
  unregisterHostUriScheme(name: string, opts?: CallOptions): Promise<{ schemes: string[] }>;
  /** omp protocol 1.1 `add_host_tools`: more tools, those registered stay (refused on pi). */
  addHostTools(tools: HostTool[], opts?: CallOptions): Promise<{ toolNames: string[] }>;
  /** omp protocol 1.1 `remove_host_tools`: the handlers go once the agent agreed. */
  removeHostTools(names: string[], opts?: CallOptions): Promise<{ toolNames: string[] }>;
  /** omp protocol 1.1 `add_host_uri_schemes`: more schemes, those registered stay. */
  addHostUriSchemes(schemes: (HostUriScheme | string)[], opts?: CallOptions): Promise<{ schemes: string[] }>;
  /** omp protocol 1.1 `remove_host_uri_schemes`: the handlers go once the agent agreed. */
  removeHostUriSchemes(names: string[], opts?: CallOptions): Promise<{ schemes: string[] }>;
  policyVerdict(requestId: string, allow: boolean, reason?: string | null): void;
  setPolicyHandler(handler: PolicyHandler | null): void;
  hostToolUpdate(callId: string, partial: HostToolResult): void;
  hostToolResult(callId: string, result: HostToolResult, opts?: { isError?: boolean }): void;
  hostUriResult(requestId: string, result: HostUriResult): void;

  stderr(): string;
  protocolErrors(): { [key: string]: unknown }[];
  info(): ClientInfo;
  /** The library's per-client counters (after close: the last values). */
  counters(): Counters;
  /** Up to `max` (256) log records; needs the start option `logLevel`. */
  nextLogs(opts?: { max?: number; timeoutMs?: number | null; signal?: AbortSignal }): Promise<LogRecord[]>;
  /** The core's event descriptor (Unix; on Windows InvalidArgumentError). Valid until close(). */
  eventFd(): number;
  /** The core's event HANDLE (Windows; elsewhere InvalidArgumentError): never set, reset or close it. */
  eventHandle(): bigint;

  /**
   * Events of the table's types named in `types` only, each typed as its interface, and an
   * EventOverflow where events were dropped.
   */
  events<K extends KnownEventType>(opts: Omit<EventsOptions, 'types'> & { types: readonly K[] }): EventIterator<KnownEventMap[K] | EventOverflow>;
  /** Every event (or those of `types`, some of them not the table's): `isKnownEvent(ev)` narrows one. */
  events(opts?: EventsOptions): EventIterator<AnyEvent>;
  ref(): this;
  unref(): this;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;

  on(event: 'event', listener: (ev: AgentEvent) => void): this;
  on(event: 'close', listener: (reason: unknown) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  /** A type the protocol table names: the listener gets that event's interface. */
  on<K extends KnownEventType>(event: K, listener: (ev: KnownEventMap[K]) => void): this;
  on(event: string, listener: (ev: AgentEvent) => void): this;
  once(event: 'event', listener: (ev: AgentEvent) => void): this;
  once(event: 'close', listener: (reason: unknown) => void): this;
  once(event: 'error', listener: (err: Error) => void): this;
  once<K extends KnownEventType>(event: K, listener: (ev: KnownEventMap[K]) => void): this;
  once(event: string, listener: (ev: AgentEvent) => void): this;
}

/**
 * The generated typed commands (`getState()`, `bash(command)`, `compact({customInstructions})`,
 * `fork(entryId)`, …; protocol.gen.d.ts), merged into Client's declaration.
 */
export interface Client extends ProtocolCommands {}

export declare function load(libraryPath?: string): string;
export declare function libraryPath(): string | null;
export declare function libraryCandidates(): string[];
export declare function version(): string;
export declare function abiVersion(): number;
export declare function statusName(status: number): string;
export declare function buildArgv(options?: StartOptions): string[];
export declare function toCoreOptions(options: StartOptions): Record<string, unknown>;

export declare function summarize(events: AgentEvent[] | string, options?: { model?: string | null }): Promise<TurnSummary>;

/** The streaming turn summary. */
export declare class Summarizer {
  constructor(options?: { model?: string | null });
  /**
   * Feeds one raw event; returns the derived items (`{kind: "text" | "reasoning" | "tool_start" | …}`;
   * the agent's recovery: `"retry"`, `"retry_end"`, `"compaction"`, `"settled"`). The tool items'
   * `parentToolCallId` names the call that made theirs (null for a call of the model).
   */
  feed(event: AgentEvent | string): { kind: string; [key: string]: unknown }[];
  summary(): TurnSummary;
  /** Frees the native summarizer (also done by the garbage collector). Idempotent. */
  close(): void;
  /** @deprecated close() */
  free(): void;
  [Symbol.dispose](): void;
}

export declare function envAllowlisted(options?: { passthrough?: string[] }): Record<string, string>;
export declare function promptFromContent(blocks: ContentBlock[]): { message: string; images: ImageContent[] };
export declare function providerConfig(options: Record<string, unknown>): {
  dir: string;
  file: string;
  env: Record<string, string>;
  model: string;
  envPassthrough: string[];
  [key: string]: unknown;
};

/** What `sanitizeSchema` took out: a removed keyword or a union branch not chosen. */
export interface DroppedSchemaPart {
  /** A JSON pointer into the input schema. */
  path: string;
  reason: string;
  value: unknown;
}
export declare function sanitizeSchema(
  schema: Record<string, unknown>,
  options?: { maxNodes?: number },
): { schema: Record<string, unknown>; dropped: DroppedSchemaPart[] };
/** `"all"`, `"none"`, or names (omp) / paths (pi from 0.50; older pi: all or none only). */
export type SkillsSelection = 'all' | 'none' | string[];
export declare function skillsFlags(options: {
  flavor: 'omp' | 'pi';
  agentVersion?: string;
  skills: SkillsSelection;
  tools?: string[];
}): { flags: string[]; needsRead: boolean; tools: string[] | null };

export type LogLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** One record of the library's log channel: never a prompt, params, system prompt or env value. */
export interface LogRecord {
  level: LogLevel;
  /** `omprpc::spawn`, `omprpc::request`, `omprpc::teardown`, … */
  target: string;
  message: string;
  /** Milliseconds since the Unix epoch. */
  t_ms: number;
  /** Which client of this process. */
  client: number;
  [field: string]: unknown;
}

/** `omprpc_client_counters` (docs/c-api.md). */
export interface Counters {
  frames_in: number;
  bytes_in: number;
  frames_out: number;
  bytes_out: number;
  requests_sent: number;
  responses: number;
  requests_pending: number;
  protocol_errors: number;
  ui_requests: number;
  events_queued: number;
  events_delivered: number;
  /** Every event dropped, by the library's queue or by this binding (each reported by an `event_overflow` event). */
  events_dropped: number;
  /** The events this binding dropped (kept for a later consumer past its bound). */
  binding_events_dropped: number;
  events_held: number;
  events_held_bytes: number;
  time_to_first_event_ms: number | null;
  last_prompt_first_event_ms: number | null;
  uptime_ms: number;
  closed: boolean;
  [counter: string]: number | boolean | null;
}
