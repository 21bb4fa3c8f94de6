'use strict';
// The module's functions besides Client: the library's version and status names, argv
// building, turn summaries (summarize, Summarizer) and the environment, prompt content and
// provider helpers.

const { native, failure, callOut, callAsyncRaw, settle } = require('./native.cjs');
const { closedError } = require('./errors.cjs');
const { toCoreOptions } = require('./args.cjs');

/** The library version string. */
function version() {
  return native().version();
}

/** The loaded library's ABI version. */
function abiVersion() {
  return native().abiVersion();
}

/** The name of a status value ("TIMEOUT"); "UNKNOWN" for others. */
function statusName(status) {
  return native().statusName(status);
}

/** The argv `Client.start(options)` would spawn (nothing started). */
function buildArgv(options = {}) {
  return JSON.parse(callOut(native().buildArgv, [JSON.stringify(toCoreOptions(options))]));
}

/**
 * The turn summary of raw events (an array, e.g. a turn's `events`, or its JSON text):
 * `{complete, text, finalText, reasoning, chunks, toolCalls, stopReason, stopReasons, usage,
 * messageUsage}`. Options `{model}`: the configured model. Runs on the pool.
 */
async function summarize(events, options) {
  const n = native();
  const ev = typeof events === 'string' ? events : JSON.stringify(events);
  const r = await callAsyncRaw(n.summarize, [ev, options === undefined || options === null ? null : JSON.stringify(options)], true);
  return JSON.parse(settle(r));
}

const summarizerFinalizer = new FinalizationRegistry((box) => {
  if (box.h) native().summarizerFree(box.h);
});

/** The streaming turn summary: feed raw events in order, read the summary at any time. */
class Summarizer {
  constructor(options) {
    const n = native();
    const out = [null];
    const err = [null];
    const st = n.summarizerNew(options === undefined || options === null ? null : JSON.stringify(options), out, err);
    if (st !== 0) throw failure(st, err[0]);
    this._box = { h: out[0] };
    summarizerFinalizer.register(this, this._box, this._box);
  }

  _h() {
    if (!this._box.h) throw closedError('the summarizer was closed');
    return this._box.h;
  }

  /** Feeds one raw event (object or JSON text); returns the derived items it produced. */
  feed(event) {
    return JSON.parse(callOut(native().summarizerFeed, [this._h(), typeof event === 'string' ? event : JSON.stringify(event)]));
  }

  /** The summary of everything fed so far. */
  summary() {
    return JSON.parse(callOut(native().summarizerSummary, [this._h()]));
  }

  /** Frees the native summarizer (also done by the garbage collector). Idempotent. */
  close() {
    if (this._box.h) {
      summarizerFinalizer.unregister(this._box);
      native().summarizerFree(this._box.h);
      this._box.h = null;
    }
  }
}
/** @deprecated close() */
Summarizer.prototype.free = Summarizer.prototype.close;
if (typeof Symbol.dispose === 'symbol') Summarizer.prototype[Symbol.dispose] = Summarizer.prototype.close;

/** This process's environment through the core's allow-list, plus `passthrough` names. */
function envAllowlisted(options) {
  return JSON.parse(callOut(native().envAllowlisted, [options === undefined || options === null ? null : JSON.stringify(options)]));
}

/** Prompt content blocks → `{message, images}` (images checked, files inlined). */
function promptFromContent(blocks) {
  return JSON.parse(callOut(native().promptFromContent, [JSON.stringify(blocks)]));
}

/**
 * Writes a custom-provider config into a private agent directory; returns `{dir, file, env,
 * model, envPassthrough}` to merge into the start options. The caller removes `dir`.
 */
function providerConfig(options) {
  return JSON.parse(callOut(native().providerConfig, [JSON.stringify(options)]));
}

/**
 * A tool-parameter JSON Schema in the shape LLM providers accept (opt-in): local `$ref`s
 * inlined, unions collapsed to the object branch, provider-rejected keywords removed,
 * descriptions kept. Returns `{schema, dropped: [{path, reason, value}]}`; a recursive or
 * remote `$ref` throws (INVALID_ARGUMENT). `options`: `{maxNodes}` bounds the output's size.
 */
function sanitizeSchema(schema, options) {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new TypeError('schema must be a JSON Schema object');
  }
  const maxNodes = options?.maxNodes ?? options?.max_nodes;
  const opts = maxNodes === undefined ? null : JSON.stringify({ max_nodes: maxNodes });
  return JSON.parse(callOut(native().sanitizeSchema, [JSON.stringify(schema), opts]));
}

/**
 * The flags that select skills for an agent: `{flavor, agentVersion?, skills, tools?}` →
 * `{flags, needsRead, tools}` (`tools`: the allow-list with `read` added when skills load).
 */
function skillsFlags(options) {
  const got = JSON.parse(callOut(native().skillsFlags, [JSON.stringify(toCoreOptions(options))]));
  return { flags: got.flags, needsRead: got.needs_read, tools: got.tools };
}

module.exports = {
  version,
  abiVersion,
  statusName,
  buildArgv,
  summarize,
  Summarizer,
  envAllowlisted,
  promptFromContent,
  providerConfig,
  sanitizeSchema,
  skillsFlags,
};
