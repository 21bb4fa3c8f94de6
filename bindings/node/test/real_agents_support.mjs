// Support for the real-agent tests (real_agents.test.mjs): the real pi / omp offline against
// the project's fake LLM, each client in a throw-away workspace.
//
// Environment (set by `make node-tests`, the Makefile's REAL_AGENT_ENV):
//   OMPRPC_FAKE_LLM                the omprpc-fake-llm binary (--script FILE --log FILE
//                                  --exit-on-eof; first stdout line `LISTENING <port>`)
//   OMPRPC_PI_CLI                  the newest pi's cli.js (1.6.0), run by OMPRPC_PI_NODE (the
//                                  Node 22 installed beside it; pi 0.80 on needs Node >= 22.19),
//                                  else by this Node (process.execPath)
//   OMPRPC_PI_PREVIOUS_CLI         pi 0.73.1's dist/cli.js (no agent_settled), run by this Node
//   OMPRPC_OMP_CLI + OMPRPC_BUN    omp's dist/cli.js, run as `bun cli.js`
// Unset (a suite run by hand): the tests skip, saying why. Set but broken: they fail.
// Every client says which agent version it runs (`info().agentVersion`) when it starts.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { Client, providerConfig } from '../index.mjs';

/** A hang guard for anything that should end on its own (the machine is loaded). */
export const GUARD = 120_000;

const env = (name) => process.env[name] || null;

/** Why the pi tests skip (a string), or false when they run. */
export function piSkip() {
  if (!env('OMPRPC_FAKE_LLM')) return 'OMPRPC_FAKE_LLM is not set (make node-tests sets it): real pi tests skipped';
  if (!env('OMPRPC_PI_CLI')) return 'OMPRPC_PI_CLI is not set (make node-tests sets it): real pi tests skipped';
  return false;
}

/** Why the tests on the previous pi (0.73.1) skip (a string), or false when they run. */
export function previousPiSkip() {
  if (!env('OMPRPC_FAKE_LLM')) return 'OMPRPC_FAKE_LLM is not set (make node-tests sets it): real pi tests skipped';
  if (!env('OMPRPC_PI_PREVIOUS_CLI')) return 'OMPRPC_PI_PREVIOUS_CLI is not set (make node-tests sets it): tests on the previous pi skipped';
  return false;
}

/** Why the omp tests skip (a string), or false when they run. */
export function ompSkip() {
  if (!env('OMPRPC_FAKE_LLM')) return 'OMPRPC_FAKE_LLM is not set (make node-tests sets it): real omp tests skipped';
  if (!env('OMPRPC_OMP_CLI')) return 'OMPRPC_OMP_CLI is not set (make node-tests sets it): real omp tests skipped';
  return false;
}

function requireFile(name, value) {
  if (!value) throw new Error(`${name} is not set`);
  if (!fs.statSync(value, { throwIfNoEntry: false })?.isFile()) throw new Error(`${name}=${value} does not exist`);
  return value;
}

/**
 * The agent's program and script: pi `node cli.js` (the newest pi with OMPRPC_PI_NODE when
 * set; `pi: 'previous'`, pi 0.73.1, with this Node), omp `bun cli.js`.
 */
function agentCommand(agent, pi) {
  if (agent === 'pi' && pi === 'previous') return [process.execPath, requireFile('OMPRPC_PI_PREVIOUS_CLI', env('OMPRPC_PI_PREVIOUS_CLI'))];
  if (agent === 'pi') {
    const node = env('OMPRPC_PI_NODE') ? requireFile('OMPRPC_PI_NODE', env('OMPRPC_PI_NODE')) : process.execPath;
    return [node, requireFile('OMPRPC_PI_CLI', env('OMPRPC_PI_CLI'))];
  }
  const cli = requireFile('OMPRPC_OMP_CLI', env('OMPRPC_OMP_CLI'));
  if (!env('OMPRPC_BUN')) throw new Error('OMPRPC_OMP_CLI is set but OMPRPC_BUN is not (omp runs as `bun cli.js`)');
  return [requireFile('OMPRPC_BUN', env('OMPRPC_BUN')), cli];
}

/** A running omprpc-fake-llm serving `script`; every request body is logged. */
async function startFakeLlm(script, root) {
  const binary = requireFile('OMPRPC_FAKE_LLM', env('OMPRPC_FAKE_LLM'));
  const scriptPath = path.join(root, 'llm-script.json');
  const log = path.join(root, 'llm-requests.jsonl');
  fs.writeFileSync(scriptPath, JSON.stringify(script));
  // stdin held open: the server exits when this process dies (--exit-on-eof).
  const child = spawn(binary, ['--script', scriptPath, '--log', log, '--exit-on-eof'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = '';
  const line = await new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the fake LLM exited (${code}) before LISTENING`)));
    child.stdout.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) resolve(buf.split('\n')[0]);
    });
  });
  const m = /^LISTENING (\d+)$/.exec(line.trim());
  if (!m) throw new Error(`the fake LLM said ${JSON.stringify(line)} instead of LISTENING <port>`);
  return { child, port: Number(m[1]), log };
}

/**
 * One throw-away agent environment: HOME, TMPDIR, an agent dir with the provider file
 * (written by the binding's providerConfig), a working dir, and the fake LLM. `opts.pi`:
 * `'previous'` runs pi 0.73.1 instead of the newest; `opts.settings`: the agent dir's
 * settings (pi: settings.json, omp: config.yml, whose YAML reads JSON).
 */
export class Workspace {
  static async create(agent, script, opts = {}) {
    const ws = new Workspace(agent);
    ws.command = agentCommand(agent, opts.pi);
    ws.root = fs.mkdtempSync(path.join(os.tmpdir(), `omprpc-node-real-${agent}-`));
    for (const d of ['home', 'agent', 'work', 'tmp']) fs.mkdirSync(path.join(ws.root, d));
    [ws.home, ws.agentDir, ws.work, ws.tmp] = ['home', 'agent', 'work', 'tmp'].map((d) => path.join(ws.root, d));
    try {
      ws.llm = await startFakeLlm(script, ws.root);
      ws.provider = providerConfig({
        flavor: agent,
        dir: ws.agentDir,
        providers: {
          fake: {
            baseUrl: `http://127.0.0.1:${ws.llm.port}/v1`,
            api: 'openai-completions',
            apiKey: 'fake-key',
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [{ id: 'fake-model', name: 'Fake Model', reasoning: false, input: ['text'], contextWindow: 128000, maxTokens: 4096 }],
          },
        },
      });
      if (opts.settings) fs.writeFileSync(path.join(ws.agentDir, agent === 'pi' ? 'settings.json' : 'config.yml'), JSON.stringify(opts.settings));
    } catch (e) {
      await ws.close();
      throw e;
    }
    return ws;
  }

  constructor(agent) {
    this.agent = agent;
  }

  writeFile(name, text) {
    const p = path.join(this.root, name);
    fs.writeFileSync(p, text);
    return p;
  }

  /** The request bodies the fake LLM received, in order. */
  llmRequests() {
    if (!fs.existsSync(this.llm.log)) return [];
    return fs.readFileSync(this.llm.log, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
  }

  /** Client.start options: the argv, a private environment (nothing inherited), generous timeouts. */
  options(extraArgs = [], extra = {}) {
    const flags =
      this.agent === 'pi'
        ? ['--mode', 'rpc', '--no-session', '--offline', '--model', 'fake/fake-model']
        : ['--mode', 'rpc', '--no-session', '--no-title', '--model', 'fake/fake-model'];
    return {
      command: [...this.command, ...flags, ...extraArgs],
      flavor: this.agent,
      cwd: this.work,
      inheritEnv: false,
      env: {
        HOME: this.home,
        TMPDIR: this.tmp, // pi keeps full bash output there
        PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
        ...(this.agent === 'pi' ? { PI_OFFLINE: '1' } : {}),
        ...this.provider.env,
      },
      startupTimeoutMs: GUARD,
      requestTimeoutMs: 60_000,
      stopGraceMs: 5000,
      ...extra,
    };
  }

  /** Starts a client; closes this workspace when start fails. */
  async start(extraArgs = [], extra = {}) {
    const t0 = Date.now();
    try {
      const c = await Client.start(this.options(extraArgs, extra));
      // Which agent the tests ran on.
      console.log(`${this.agent} ${c.info().agentVersion} ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return c;
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  async close() {
    const child = this.llm?.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    if (process.env.OMPRPC_KEEP_TMP === '1') console.log(`kept ${this.root}`);
    else if (this.root) fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** Every event a client's listeners see, with waits on them. */
export class Recorder {
  constructor(client) {
    this.items = [];
    this.waiters = new Set();
    client.on('event', (ev) => {
      this.items.push(ev);
      for (const w of this.waiters) w();
    });
  }

  mark() {
    return this.items.length;
  }

  since(mark) {
    return this.items.slice(mark);
  }

  /** The first event from `since` on that `pred` accepts (waits up to GUARD). */
  async wait(what, pred, since = 0) {
    const deadline = Date.now() + GUARD;
    for (;;) {
      const found = this.items.slice(since).find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${GUARD} ms`);
      let wake;
      let timer;
      await new Promise((resolve) => {
        wake = resolve;
        this.waiters.add(wake);
        timer = setTimeout(resolve, left);
      });
      clearTimeout(timer);
      this.waiters.delete(wake);
    }
  }
}

/** True when neither the process `pid` nor its process group exists. */
export function groupGone(pid) {
  for (const target of [pid, -pid]) {
    try {
      process.kill(target, 0);
      return false;
    } catch (e) {
      if (e.code !== 'ESRCH') return false;
    }
  }
  return true;
}

/** The text parts of a tool result or message. */
export function textOf(value) {
  const content = value?.content;
  if (typeof content === 'string') return content;
  return (content || []).filter((c) => c && c.type === 'text').map((c) => c.text).join('');
}

export const ofType = (events, type) => events.filter((e) => e.type === type);

export const toolNames = (request) => (request.tools || []).map((t) => t.function.name);
