'use strict';
// Client's typed commands (installed on Client.prototype by lib/client.cjs): each one C
// export, its arguments checked and its JSON answer parsed; request() sends any other command.
// A regular block on purpose: it is to be generated from a table of the protocol's commands.

const { text, timeoutArg } = require('./args.cjs');

class ClientCommands {
  /** Any command `{type, ...params}`; resolves the response's `data` (null when absent). */
  async request(type, params, opts = {}) {
    const p = params === undefined || params === null ? null : JSON.stringify(params);
    return JSON.parse(await this._async('request', [text(type, 'type'), p, timeoutArg(opts.timeoutMs)], true));
  }

  async getState(opts = {}) {
    return JSON.parse(await this._async('getState', [timeoutArg(opts.timeoutMs)], true));
  }

  async bash(command, opts = {}) {
    return JSON.parse(await this._async('bash', [text(command, 'command'), timeoutArg(opts.timeoutMs)], true));
  }
}

module.exports = { ClientCommands };
