'use strict';
// Argument helpers: timeouts, strings without NUL, start options in the C keys, prompt
// arguments and host tool results.

const { TIMEOUT_INFINITE, TIMEOUT_DEFAULT } = require('./constants.cjs');
const { Status, jsError } = require('./errors.cjs');

function timeoutArg(v, what) {
  if (v === undefined) return TIMEOUT_DEFAULT;
  if (v === null || v === Infinity) return TIMEOUT_INFINITE;
  if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError(`${what || 'timeoutMs'} must be a number, null or Infinity`);
  if (v === TIMEOUT_INFINITE || v === TIMEOUT_DEFAULT) return v;
  if (v < 0) throw new RangeError(`${what || 'timeoutMs'} must be >= 0 (or -1: infinite, -2: the client default)`);
  return Math.floor(v);
}

function text(v, what) {
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string`);
  if (v.includes('\0')) throw jsError(Status.INVALID_ARGUMENT, `${what} contains a NUL character`);
  return v;
}

/** The checks of the generated command methods' params (lib/protocol.gen.cjs): each returns the value. */
const check = {
  string: text,
  boolean(v, what) {
    if (typeof v !== 'boolean') throw new TypeError(`${what} must be a boolean`);
    return v;
  },
  integer(v, what) {
    if (!Number.isInteger(v)) throw new TypeError(`${what} must be an integer`);
    return v;
  },
  number(v, what) {
    if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError(`${what} must be a number`);
    return v;
  },
  array(v, what) {
    if (!Array.isArray(v)) throw new TypeError(`${what} must be an array`);
    return v;
  },
  object(v, what) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new TypeError(`${what} must be an object`);
    return v;
  },
};

function snakeKey(k) {
  return k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/**
 * The start options, camelCase: the core's keys (src/client/options.rs KNOWN, docs/c-api.md)
 * as this binding spells them; each becomes its snake_case key for the core. One spelling per
 * option, so a typo or a snake_case key is a TypeError here rather than a silent default.
 */
const START_OPTIONS = [
  // the agent and its argv
  'command', 'executable', 'flavor', 'agentVersion', 'provider', 'model', 'sessionDir', 'thinking',
  'systemPrompt', 'appendSystemPrompt', 'systemPromptViaFile', 'providerSessionId', 'tools', 'noSession',
  'noSkills', 'skills', 'sanitizeToolSchemas', 'noRules', 'noTitle', 'rpcDefaults', 'extensions', 'extraArgs',
  'approvalMode', 'trustProject', 'mcp', 'contextFiles', 'excludeTools',
  // its process
  'cwd', 'env', 'inheritEnv', 'envPassthrough', 'launcher', 'launcherEnv', 'launcherShell', 'recordPath',
  // the session
  'handshake', 'startupTimeoutMs', 'requestTimeoutMs', 'turnTimeoutMs', 'turnIdleTimeoutMs', 'activityProbeMs',
  'maxEventHistory', 'maxStderrLines', 'maxFrameBytes', 'maxOutboundFrameBytes', 'eventQueueCapacity',
  'eventQueueMaxBytes', 'maxTurnBytes', 'turnEvents', 'turnSummary', 'promptCompleteEvents', 'queueResponses',
  'logLevel', 'logQueueCapacity', 'stopGraceMs', 'killGraceMs', 'negotiateV2', 'invalidFrames',
  // host tools, URIs, the policy gate, UI, the bridge
  'hostTools', 'hostUriSchemes', 'hostToolTimeoutMs', 'toolPolicy', 'uiPolicy', 'bridge', 'bridgeTransport',
  'bridgeListen', 'bridgeAdvertise',
];
/** Binding-only start options (not sent to the core). */
const BINDING_OPTIONS = ['closeOnExit', 'ref', 'libraryPath', 'signal'];

const CORE_KEYS = new Map(START_OPTIONS.map((k) => [k, snakeKey(k)]));
/** An option's camelCase name by its snake_case spelling (for the error that names it). */
const BY_SNAKE = new Map([...START_OPTIONS, ...BINDING_OPTIONS].map((k) => [snakeKey(k), k]));
const BINDING_ONLY = new Set(BINDING_OPTIONS);

/**
 * The InvalidArgumentError (INVALID_ARGUMENT, the core's status and wording for an unknown option:
 * tests/fixtures/error-table.json) of a start option this binding does not know, naming it as the
 * program spelled it (and its camelCase spelling when it is a snake_case one).
 */
function unknownOption(k) {
  const camel = BY_SNAKE.get(k);
  if (camel !== undefined && camel !== k) return jsError(Status.INVALID_ARGUMENT, `unknown option "${k}": it is spelled "${camel}" here (camelCase)`);
  return jsError(Status.INVALID_ARGUMENT, `unknown option "${k}"`);
}

/**
 * Converts start options to the core's keys: each camelCase option becomes its snake_case key
 * (`maxEventHistory` → `max_event_history`); values (e.g. `env`, tool specs) are untouched;
 * `undefined` values are dropped, binding-only options removed. An unknown or snake_case key
 * is an InvalidArgumentError naming it.
 */
function toCoreOptions(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('options must be an object');
  }
  const out = {};
  for (const [k, v] of Object.entries(options)) {
    if (BINDING_ONLY.has(k)) continue;
    const key = CORE_KEYS.get(k);
    if (key === undefined) throw unknownOption(k);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function optionsJson(opts, strip) {
  if (opts === undefined || opts === null) return null;
  const o = {};
  let any = false;
  for (const [k, v] of Object.entries(opts)) {
    if (strip.includes(k) || v === undefined) continue;
    o[k] = v;
    any = true;
  }
  return any ? JSON.stringify(o) : null;
}

const CALL_OPTS = ['timeoutMs', 'signal'];

/** (message, options_json) of prompt / steer / follow_up: a message with a NUL travels inside the options. */
function promptArgs(message, opts) {
  if (typeof message !== 'string') throw new TypeError('message must be a string');
  if (!message.includes('\0')) return [message, optionsJson(opts, CALL_OPTS)];
  return [null, optionsJson({ ...opts, message }, CALL_OPTS)];
}

/** Host tool results: `"text"` or `{content:[…], details?}`; anything else becomes text. */
function toolResultJson(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined || v === null) return JSON.stringify('');
  if (typeof v === 'object' && Array.isArray(v.content)) return JSON.stringify(v);
  return JSON.stringify(JSON.stringify(v));
}

function errorText(e) {
  if (e instanceof Error) return e.message || String(e);
  return typeof e === 'string' ? e : JSON.stringify(e);
}

module.exports = { timeoutArg, text, check, toCoreOptions, promptArgs, toolResultJson, errorText };
