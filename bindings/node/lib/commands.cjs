'use strict';
// Client's generic command (installed on Client.prototype by lib/client.cjs): request() sends
// any command and resolves its data. The typed commands (getState, bash, …) are generated from
// src/protocol/table.json into lib/protocol.gen.cjs and all send through it.

const { text, timeoutArg } = require('./args.cjs');

class ClientCommands {
  /**
   * Any command `{type, ...params}`; resolves the response's `data` (null when absent).
   * `signal` rejects the wait with an AbortError (the command may still reach the agent).
   */
  async request(type, params, opts = {}) {
    const p = params === undefined || params === null ? null : JSON.stringify(params);
    const t = text(type, 'type');
    return JSON.parse(await this._async('request', [t, p, timeoutArg(opts.timeoutMs)], true, opts.signal, t));
  }
}

module.exports = { ClientCommands };
