'use strict';
// Host tools, host URIs and the tool policy gate. ClientHost holds Client's methods for them
// (installed on Client.prototype by lib/client.cjs): registering tools and schemes with their
// handlers, running the handlers on host calls and policy questions, the raw answers.

const { Status, CancelledError, ClosedError, NotFoundError, jsError } = require('./errors.cjs');
const { text, timeoutArg, toolResultJson, errorText } = require('./args.cjs');

class ClientHost {
  /**
   * Replaces the registered host tools (`[{name, description, parameters, label?, hidden?,
   * loadMode?, handler?}]`); tools with a `handler` are answered by it. Resolves the agent's
   * answer (`{toolNames}`).
   */
  async setHostTools(tools, opts = {}) {
    const { specs, handlers } = splitAll(tools, 'name', 'tools');
    return this._register('_tools', handlers, () => this._async('setHostTools', [JSON.stringify(specs), timeoutArg(opts.timeoutMs)], true));
  }

  /**
   * A host registration whose handlers (`field`: '_tools' or '_schemes') are installed before
   * the call — a host call may follow the agent's answer at once — and put back if it fails.
   */
  async _register(field, handlers, call) {
    const previous = this[field];
    this[field] = handlers;
    this._updatePump();
    try {
      return JSON.parse(await call());
    } catch (e) {
      this[field] = previous;
      this._updatePump();
      throw e;
    }
  }

  /**
   * Registers more host tools (`add_host_tools`, omp protocol 1.1; entries as for
   * setHostTools); those registered stay, one of the same name is replaced. Resolves the
   * agent's answer (`{toolNames}`). A refusal (CommandError from an agent without the command,
   * InvalidArgumentError from a bridged client such as pi) keeps the handlers as they were.
   */
  async addHostTools(tools, opts = {}) {
    return this._addHandlers('_tools', 'addHostTools', splitAll(tools, 'name', 'tools'), opts);
  }

  /**
   * Unregisters host tools by name (`remove_host_tools`, omp protocol 1.1); their handlers go
   * once the agent agreed (until then it may still call them). Resolves the agent's answer
   * (`{toolNames}`: those still registered).
   */
  async removeHostTools(names, opts = {}) {
    return this._removeHandlers('_tools', 'removeHostTools', names, (n) => n.trim(), opts);
  }

  /**
   * Runs the add_ export `name` with `specs`, its `handlers` added (`field`: '_tools' or
   * '_schemes') before the call, as in _register; a failure puts back, key by key, what each
   * added key held, so a concurrent registration of other keys stays.
   */
  async _addHandlers(field, name, { specs, handlers }, opts) {
    const before = [...handlers.keys()].map((k) => [k, this[field].get(k)]);
    for (const [k, v] of handlers) this[field].set(k, v);
    this._updatePump();
    try {
      return JSON.parse(await this._async(name, [JSON.stringify(specs), timeoutArg(opts.timeoutMs)], true));
    } catch (e) {
      for (const [k, v] of before) {
        if (v === undefined) this[field].delete(k);
        else this[field].set(k, v);
      }
      this._updatePump();
      throw e;
    }
  }

  /**
   * Runs the remove_ export `name` with `names`; their handlers go once the agent agreed.
   * `key` maps a name to the table's key as the core reads it (the core checks the names, so
   * only strings get that far).
   */
  async _removeHandlers(field, name, names, key, opts) {
    if (!Array.isArray(names)) throw new TypeError('names must be an array');
    const answer = JSON.parse(await this._async(name, [JSON.stringify(names), timeoutArg(opts.timeoutMs)], true));
    for (const n of names) this[field].delete(key(n));
    this._updatePump();
    return answer;
  }

  /** Adds (or replaces, by name) one host tool with its async handler. */
  async registerHostTool(tool, opts = {}) {
    if (!tool || typeof tool.name !== 'string') throw new TypeError('tool.name must be a string');
    const list = [...this._tools.values()].filter((e) => e.spec.name !== tool.name).map(joinHandler);
    list.push(tool);
    return this.setHostTools(list, opts);
  }

  /** Removes one host tool by name. */
  async unregisterHostTool(name, opts = {}) {
    return this.setHostTools([...this._tools.values()].filter((e) => e.spec.name !== name).map(joinHandler), opts);
  }

  /**
   * Replaces the registered host URI schemes (`[{scheme, description?, writable?,
   * immutable?, handler?}]`). Resolves the agent's answer (`{schemes}`).
   */
  async setHostUriSchemes(schemes, opts = {}) {
    const { specs, handlers } = splitAll(schemes, 'scheme', 'schemes');
    const keyed = new Map([...handlers].map(([k, v]) => [String(k).trim().toLowerCase(), v]));
    return this._register('_schemes', keyed, () => this._async('setHostUriSchemes', [JSON.stringify(specs), timeoutArg(opts.timeoutMs)], true));
  }

  /** Adds (or replaces) one host URI scheme with its async handler. */
  async registerHostUriScheme(scheme, opts = {}) {
    if (!scheme || typeof scheme.scheme !== 'string') throw new TypeError('scheme.scheme must be a string');
    const key = scheme.scheme.trim().toLowerCase();
    const list = [...this._schemes.entries()].filter(([k]) => k !== key).map(([, e]) => joinHandler(e));
    list.push(scheme);
    return this.setHostUriSchemes(list, opts);
  }

  /** Removes one host URI scheme by name (re-sends the rest, like registerHostUriScheme). */
  async unregisterHostUriScheme(name, opts = {}) {
    if (typeof name !== 'string') throw new TypeError('name must be a string');
    const key = name.trim().toLowerCase();
    return this.setHostUriSchemes([...this._schemes.entries()].filter(([k]) => k !== key).map(([, e]) => joinHandler(e)), opts);
  }

  /**
   * Registers more host URI schemes (`add_host_uri_schemes`, omp protocol 1.1; entries as for
   * setHostUriSchemes); one already registered is redefined, the others stay. Resolves the
   * agent's answer (`{schemes}`). A refusal keeps the handlers as they were.
   */
  async addHostUriSchemes(schemes, opts = {}) {
    return this._addHandlers('_schemes', 'addHostUriSchemes', splitAll(schemes, 'scheme', 'schemes'), opts);
  }

  /**
   * Unregisters host URI schemes by name (`remove_host_uri_schemes`, omp protocol 1.1); their
   * handlers go once the agent agreed. Resolves the agent's answer (`{schemes}`).
   */
  async removeHostUriSchemes(names, opts = {}) {
    return this._removeHandlers('_schemes', 'removeHostUriSchemes', names, (n) => n.trim().toLowerCase(), opts);
  }

  /**
   * Answers a `policy_eval` event (the `tool_policy` gate in host mode): allow, or block with
   * `reason`. NotFoundError for an unknown id. Not needed with a policy handler.
   */
  policyVerdict(requestId, allow, reason) {
    this._syncNoOut('policyVerdict', [text(requestId, 'requestId'), !!allow, reason === undefined || reason === null ? null : text(reason, 'reason')]);
  }

  /**
   * Answers every `policy_eval` with `handler(event, ctx)`: `true`/`false` or
   * `{allow, reason}` (async allowed; a throw blocks with its message). null removes it.
   */
  setPolicyHandler(handler) {
    if (handler !== null && handler !== undefined && typeof handler !== 'function') throw new TypeError('handler must be a function or null');
    this._policyHandler = handler || null;
    this._updatePump();
  }

  _onPolicyEval(ev) {
    const handler = this._policyHandler;
    if (!handler || typeof ev.id !== 'string') return;
    const id = ev.id;
    const ctx = { requestId: id, toolName: ev.toolName, toolCallId: ev.toolCallId, event: ev, client: this };
    Promise.resolve()
      .then(() => handler(ev, ctx))
      .then(
        (v) => {
          const allow = typeof v === 'object' && v !== null ? !!v.allow : !!v;
          const reason = typeof v === 'object' && v !== null && typeof v.reason === 'string' ? v.reason : null;
          this._hostSend(() => this.policyVerdict(id, allow, reason));
        },
        (err) => this._hostSend(() => this.policyVerdict(id, false, errorText(err))),
      );
  }

  /** Streams a partial result for host tool call `callId` (raw; handlers use ctx.update). */
  hostToolUpdate(callId, partial) {
    this._syncNoOut('hostToolUpdate', [text(callId, 'callId'), toolResultJson(partial)]);
  }

  /** The final result of host tool call `callId` (raw; handlers just return). */
  hostToolResult(callId, result, opts = {}) {
    this._syncNoOut('hostToolResult', [text(callId, 'callId'), toolResultJson(result), !!(opts && opts.isError)]);
  }

  /** Answers host URI request `requestId` (raw; handlers just return). */
  hostUriResult(requestId, result) {
    this._syncNoOut('hostUriResult', [text(requestId, 'requestId'), JSON.stringify(result)]);
  }

  /** Whether an event of this type reaches a consumer that could answer it (a client that
   * ever called nextEvent() pulls its events, between calls too). */
  _seenBy(type, pulled) {
    if (pulled || this._pulls || this._eventWaiters.length > 0 || this.listenerCount('event') > 0 || this.listenerCount(type) > 0) return true;
    for (const it of this._iterators) if (it._accepts(type)) return true;
    return false;
  }

  /** A registered host call without a handler: the program answers it from its events; when
   * none of its consumers will see it, nobody can, and it is answered with an error now. */
  _unanswerable(ev, pulled) {
    if (this._seenBy(ev.type, pulled)) return false;
    const what = ev.type === 'host_tool_call' ? `host tool ${ev.toolName}` : `host URI ${ev.url}`;
    return `${what} has no handler and no listener or iterator receives ${ev.type} events`;
  }

  _onHostToolCall(ev, pulled) {
    const entry = this._tools.get(ev.toolName);
    if (!entry || typeof ev.id !== 'string') return; // the core answers unregistered tools
    if (!entry.handler) {
      const why = this._unanswerable(ev, pulled);
      if (why) this._hostSend(() => this.hostToolResult(ev.id, why, { isError: true }));
      return;
    }
    const ac = new AbortController();
    this._hostCalls.set(ev.id, ac);
    const id = ev.id;
    const ctx = {
      callId: id,
      toolCallId: ev.toolCallId,
      toolName: ev.toolName,
      signal: ac.signal,
      event: ev,
      client: this,
      update: (partial) => this._hostSend(() => this.hostToolUpdate(id, partial)),
    };
    Promise.resolve()
      .then(() => entry.handler(ev.arguments, ctx))
      .then(
        (res) => this._hostSend(() => this.hostToolResult(id, res)),
        (err) => this._hostSend(() => this.hostToolResult(id, err && err.result !== undefined ? err.result : errorText(err), { isError: true })),
      )
      .finally(() => this._hostCalls.delete(id));
  }

  _onHostUriRequest(ev, pulled) {
    const url = typeof ev.url === 'string' ? ev.url : '';
    const i = url.indexOf('://');
    const entry = i > 0 ? this._schemes.get(url.slice(0, i).toLowerCase()) : undefined;
    if (!entry || typeof ev.id !== 'string') return; // the core answers unregistered schemes
    if (!entry.handler) {
      const why = this._unanswerable(ev, pulled);
      if (why) this._hostSend(() => this.hostUriResult(ev.id, { error: why }));
      return;
    }
    const ac = new AbortController();
    this._hostCalls.set(ev.id, ac);
    const id = ev.id;
    const ctx = { requestId: id, signal: ac.signal, event: ev, client: this };
    Promise.resolve()
      .then(() => entry.handler(ev, ctx))
      .then(
        (res) => this._hostSend(() => this.hostUriResult(id, res === undefined || res === null ? {} : typeof res === 'string' ? { content: res } : res)),
        (err) => this._hostSend(() => this.hostUriResult(id, { error: errorText(err) })),
      )
      .finally(() => this._hostCalls.delete(id));
  }

  /** Sends a host reply; false when the call is no longer open (cancelled, unknown, closed). */
  _hostSend(fn) {
    try {
      fn();
      return true;
    } catch (e) {
      if (e instanceof CancelledError || e instanceof NotFoundError || e instanceof ClosedError) return false;
      throw e;
    }
  }

  _onHostCancel(ev) {
    const ac = this._hostCalls.get(ev.targetId);
    if (ac) ac.abort(jsError(Status.CANCELLED, `the agent cancelled ${ev.targetId}`));
  }
}

function splitHandler(item, key, handlers) {
  if (!item || typeof item !== 'object' || Array.isArray(item)) {
    if (typeof item === 'string' && key === 'scheme') {
      // A bare name is shorthand for `{scheme}`: the core reads only objects.
      const spec = { scheme: item };
      handlers.set(item.trim().toLowerCase(), { spec, handler: null });
      return spec;
    }
    throw new TypeError(`each entry must be an object with a "${key}"`);
  }
  const { handler, ...spec } = item;
  if (handler !== undefined && typeof handler !== 'function') throw new TypeError(`${key} ${spec[key]}: handler must be a function`);
  const k = key === 'scheme' ? String(spec.scheme).trim().toLowerCase() : spec[key];
  handlers.set(k, { spec, handler: handler || null });
  return spec;
}

/** A registration list (`what`) split: the entries without handlers, the handlers by key. */
function splitAll(list, key, what) {
  if (!Array.isArray(list)) throw new TypeError(`${what} must be an array`);
  const handlers = new Map();
  const specs = list.map((item) => splitHandler(item, key, handlers));
  return { specs, handlers };
}

function joinHandler(e) {
  return e.handler ? { ...e.spec, handler: e.handler } : e.spec;
}

module.exports = { ClientHost, splitHandler, joinHandler };
