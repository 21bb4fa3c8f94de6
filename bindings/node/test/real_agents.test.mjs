// The Node binding against the REAL pi (the newest, 1.6.0) and omp 18.2.3, offline, with the
// project's fake LLM (the scenarios of tests/real_pi.rs and tests/real_omp.rs, issue 11 §3).
// Workspaces and the environment contract: real_agents_support.mjs. One client per suite where
// the scenarios do not interfere (each start costs seconds); tests in a suite run in order, the
// suites two at a time. Each test says which agent version it ran on.
import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { CancelledError, CommandError } from '../index.mjs';
import { GUARD, Workspace, Recorder, piSkip, ompSkip, groupGone, textOf, ofType, toolNames } from './real_agents_support.mjs';
import { sleep } from './helpers.mjs';

const ADD_SCHEMA = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] };

const ASK_EXTENSION = `
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask for a name",
    handler: async (args, ctx) => {
      const name = await ctx.ui.input("Your name?", "type it");
      ctx.ui.notify(\`hello \${name}\`, "info");
    },
  });
  pi.registerCommand("quiet", { description: "Does nothing", handler: async () => {} });
}
`;

const HANG = { match: 'hang', replies: [{ text: 'thinking about it', hang: true }] };
const STEER = { match: 'steer me', replies: [{ text: 'steered ok' }] };
const SAY_HELLO = { match: 'say hello', replies: [{ text: 'Hello from the fake model' }] };
const ADD = {
  match: 'add numbers',
  replies: [{ tool_call: { name: 'host_add', arguments: { a: 2, b: 3 } } }, { text: 'sum is {{last_tool_result}}' }],
};

// A slow stream (four chunks 250 ms apart), then the answer to a follow-up queued during it.
const SLOW = { match: 'slow', replies: [{ text: 'one two three four', chunk_delay_ms: 250 }] };
const FOLLOW = { match: 'follow me', replies: [{ text: 'followed ok' }] };
const SILENT = {
  match: 'work silently',
  replies: [{ tool_call: { name: 'host_silent', arguments: { a: 2, b: 3 } } }, { text: 'silent sum is {{last_tool_result}}' }],
};
/** How long the silent host tool works: longer than the clients' turnIdleTimeoutMs. */
const SILENT_WORK_MS = 5000;
const IDLE_TIMEOUT_MS = 4000;

/** pi announces the end of its work (`agent_settled`) from 0.80.4. */
function settles(info) {
  if (info.flavor !== 'pi') return false;
  const [a, b, c] = String(info.agentVersion).split('.').map(Number);
  return a > 0 || b > 80 || (b === 80 && c >= 4);
}

/** Says which agent version a test ran on (a beforeEach of each suite). */
function sayVersion(client) {
  return (t) => {
    const info = client()?.info();
    if (info) t.diagnostic(`ran on ${info.flavor} ${info.agentVersion}`);
  };
}

const isTextDelta = (e) => e.type === 'message_update' && e.assistantMessageEvent?.type === 'text_delta';

function one(turn, type) {
  const found = ofType(turn.events, type);
  assert.equal(found.length, 1, `expected one ${type}, got ${found.length}: ${turn.events.map((e) => e.type)}`);
  return found[0];
}

/** host_silent: works for SILENT_WORK_MS without a word (no update), then adds. */
function silentHostTool(calls, extra = {}) {
  return {
    name: 'host_silent',
    description: 'Add two numbers, slowly',
    parameters: ADD_SCHEMA,
    ...extra,
    handler: async (args) => {
      const t0 = Date.now();
      await sleep(SILENT_WORK_MS); // the scenario: the host's deliberate silent work
      calls.push(Date.now() - t0);
      return String(args.a + args.b);
    },
  };
}

/** A follow_up queued while the model streams runs in the same run, after the answer:
 * waitForIdle returns only after that run's agent_end. */
async function assertFollowUpRunsBeforeIdle(ws, client, rec) {
  const before = ws.llmRequests().length;
  const mark = rec.mark();
  await client.prompt('slow please');
  await rec.wait('the first text delta', isTextDelta, mark);
  await client.followUp('follow me');
  await client.waitForIdle({ timeoutMs: GUARD });
  const seen = rec.since(mark);
  const ends = ofType(seen, 'agent_end');
  assert.ok(ends.length > 0, `${seen.map((e) => e.type)}`);
  assert.equal(textOf(ends.at(-1).messages.at(-1)), 'followed ok', JSON.stringify(ends.at(-1)).slice(0, 2000));
  assert.equal(ws.llmRequests().length, before + 2, 'the answer, then the follow-up');
  assert.equal((await client.getState()).isStreaming, false);
}

/** An extension command with no work (pi: acknowledged after its handler, no run; omp:
 * acknowledged at once, ended by prompt_result) completes promptAndWait with agentInvoked
 * false, leaves the agent idle and never reaches the model. */
async function assertQuietCommandCompletes(ws, client) {
  const before = ws.llmRequests().length;
  const turn = await client.promptAndWait('/quiet', { timeoutMs: GUARD });
  assert.equal(turn.agentInvoked, false);
  assert.equal(turn.assistantMessage ?? null, null);
  assert.equal(ofType(turn.events, 'agent_start').length, 0);
  await client.waitForIdle({ timeoutMs: GUARD });
  assert.equal(ws.llmRequests().length, before, 'a command never reaches the model');
}

/** The idle clock stands still while a host call is open: the turn succeeds. */
async function assertSilentHostToolOutlastsTheIdleTimeout(client, calls) {
  const turn = await client.promptAndWait('work silently', { timeoutMs: GUARD });
  assert.equal(calls.length, 1);
  assert.ok(calls[0] >= SILENT_WORK_MS - 5 && SILENT_WORK_MS > IDLE_TIMEOUT_MS, `${calls}`);
  const end = one(turn, 'tool_execution_end');
  assert.deepEqual([end.toolName, end.isError, textOf(end.result)], ['host_silent', false, '5']);
  assert.equal(turn.assistantText, 'silent sum is 5');
}

async function assertClosesCleanly(client) {
  const { pid } = client.info();
  assert.ok(Number.isInteger(pid) && pid > 0, `pid ${pid}`);
  assert.equal(groupGone(pid), false, 'the agent is not running before close');
  await client.close();
  assert.equal(groupGone(pid), true, `the agent (pid ${pid}) or its process group outlived close()`);
}

/** The host tools' handlers and what they saw. */
function hostCalls() {
  const calls = { addArgs: [], waitStarted: null, waitCancelled: null };
  let started;
  calls.waitStarted = new Promise((r) => (started = r));
  calls.add = async (args, ctx) => {
    calls.addArgs.push(args);
    ctx.update('adding…');
    return String(args.a + args.b);
  };
  calls.wait = async (_args, ctx) => {
    started();
    // Waits until the agent cancels the call (or the hang guard passes).
    calls.waitCancelled = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), GUARD);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(ctx.signal.reason);
      }, { once: true });
    });
    return 'too late';
  };
  return calls;
}

// The suites are independent (each its own agent and fake LLM): two at a time. Each holds a
// pool thread for its turns; with the event reactor's and an abort()'s that stays within
// libuv's 4.
describe('real agents', { concurrency: 2 }, () => {
  // --- pi with the policy gate (rules mode): its bash is blocked ----------------------------
  // The same client has turnIdleTimeoutMs (4 s) and a bridged host tool that works silently for
  // longer; its other turns are never that quiet.

  describe('pi, gated', { skip: piSkip(), concurrency: false }, () => {
    let ws;
    let client;
    let rec;
    const silentCalls = [];
    before(async () => {
      ws = await Workspace.create('pi', [
        {
          match: 'run forbidden',
          replies: [
            { tool_call: { name: 'bash', arguments: { command: 'touch ran-forbidden' } } },
            { text: 'after: {{last_tool_result}}' },
          ],
        },
        HANG,
        SLOW,
        FOLLOW,
        SILENT,
      ]);
      client = await ws.start([], {
        toolPolicy: { mode: 'rules', block: { bash: 'no shell for you' }, default: 'allow' },
        hostTools: [silentHostTool(silentCalls)],
        turnIdleTimeoutMs: IDLE_TIMEOUT_MS,
      });
      rec = new Recorder(client);
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });
    beforeEach(sayVersion(() => client));

    it('the policy gate blocks pi\'s bash', async () => {
      assert.equal(client.info().bridgeLoaded, true);
      const turn = await client.promptAndWait('run forbidden', { timeoutMs: GUARD });
      const end = one(turn, 'tool_execution_end');
      assert.deepEqual([end.toolName, end.isError, textOf(end.result)], ['bash', true, 'no shell for you']);
      assert.equal(turn.assistantText, 'after: no shell for you');
      assert.equal(fs.existsSync(path.join(ws.work, 'ran-forbidden')), false, 'the blocked command ran');
      const blocked = await rec.wait('tool_blocked', (e) => e.type === 'tool_blocked');
      assert.deepEqual([blocked.toolName, blocked.reason], ['bash', 'no shell for you']);
    });

    // Before the steer test: the steer it parks would reach the next prompt.
    it('a follow_up queued during a slow stream runs before waitForIdle returns', async () => {
      await assertFollowUpRunsBeforeIdle(ws, client, rec);
    });

    it('a bridged host tool working silently outlasts turnIdleTimeoutMs', async () => {
      await assertSilentHostToolOutlastsTheIdleTimeout(client, silentCalls);
    });

    it('steer then abort during a hanging stream: pi parks the steer, waitForIdle returns', async () => {
      const mark = rec.mark();
      await client.prompt('hang please');
      await rec.wait('the first text delta', isTextDelta, mark);
      await client.steer('steer me now');
      const q = await rec.wait('queue_update', (e) => e.type === 'queue_update', mark);
      assert.deepEqual(q.steering, ['steer me now']);
      await client.abort();
      await client.waitForIdle({ timeoutMs: GUARD });
      const ends = ofType(rec.since(mark), 'agent_end');
      assert.equal(ends.length, 1, 'the aborted run\'s agent_end only');
      assert.equal(ends[0].messages.at(-1).stopReason, 'aborted');
      const state = await client.getState();
      assert.equal(state.isStreaming, false);
      assert.equal(state.pendingMessageCount, 1);
      assert.ok(!ws.llmRequests().some((r) => r.messages.slice(1).some((m) => textOf(m).includes('steer me'))));
    });

    it('close leaves no process', async () => {
      await assertClosesCleanly(client);
    });
  });

  // --- pi with bridged host tools and an extension, shared by the scenarios below -----------

  describe('pi', { skip: piSkip(), concurrency: false }, () => {
    let ws;
    let client;
    let rec;
    let calls;
    before(async () => {
      ws = await Workspace.create('pi', [
        SAY_HELLO,
        {
          match: 'run bash',
          replies: [
            { text: 'Running it. ', tool_call: { name: 'bash', arguments: { command: 'echo hi-from-bash' } } },
            { text: 'done: {{last_tool_result}}' },
          ],
        },
        ADD,
        { match: 'wait for the host', replies: [{ tool_call: { name: 'host_wait', arguments: {} } }, { text: 'no' }] },
        {
          match: 'big output',
          replies: [
            { tool_call: { name: 'bash', arguments: { command: "head -c 3000000 /dev/zero | tr '\\0' x" } } },
            { text: 'big done' },
          ],
        },
      ]);
      const ext = ws.writeFile('ask.mjs', ASK_EXTENSION);
      calls = hostCalls();
      client = await ws.start(['--extension', ext], {
        hostTools: [
          { name: 'host_add', description: 'Add two numbers', parameters: ADD_SCHEMA, handler: calls.add },
          { name: 'host_wait', description: 'Waits until cancelled', parameters: { type: 'object', properties: {} }, handler: calls.wait },
        ],
      });
      rec = new Recorder(client);
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });
    beforeEach(sayVersion(() => client));

    it('a text turn', async () => {
      const before = ws.llmRequests().length;
      const turn = await client.promptAndWait('say hello', { timeoutMs: GUARD });
      assert.equal(turn.assistantText, 'Hello from the fake model');
      assert.equal(turn.agentInvoked, true);
      assert.equal(turn.assistantMessage.stopReason, 'stop');
      const deltas = turn.events.filter(isTextDelta).map((e) => e.assistantMessageEvent.delta);
      assert.deepEqual(deltas, ['Hello ', 'from ', 'the ', 'fake ', 'model']);
      // pi 1.x ends its work with agent_settled (after the run's agent_end); older pi at the agent_end.
      const ends = settles(client.info()) ? ['agent_settled', true] : ['agent_end', false];
      assert.deepEqual([turn.events[0].type, turn.events.at(-1).type, turn.settled], ['agent_start', ...ends]);
      assert.deepEqual([turn.outcome, turn.attempts, turn.failedAttempts, turn.compactions], [ends[0], 1, [], []]);
      const reqs = ws.llmRequests();
      assert.equal(reqs.length, before + 1);
      assert.deepEqual(reqs.at(-1).messages.at(-1), { role: 'user', content: [{ type: 'text', text: 'say hello' }] });
      // pi offers the bridged host tools next to its own.
      const names = toolNames(reqs.at(-1));
      for (const n of ['bash', 'host_add', 'host_wait']) assert.ok(names.includes(n), `${names}`);
    });

    it('a native tool call (pi\'s bash)', async () => {
      const turn = await client.promptAndWait('please run bash', { timeoutMs: GUARD });
      const start = one(turn, 'tool_execution_start');
      assert.deepEqual([start.toolName, start.args], ['bash', { command: 'echo hi-from-bash' }]);
      const end = one(turn, 'tool_execution_end');
      assert.equal(end.toolCallId, start.toolCallId);
      assert.deepEqual([end.isError, textOf(end.result)], [false, 'hi-from-bash\n']);
      assert.equal(turn.assistantText, 'done: hi-from-bash\n');
      assert.deepEqual(turn.messages.map((m) => m.role), ['user', 'assistant', 'toolResult', 'assistant']);
    });

    it('a host tool through the bridge', async () => {
      const turn = await client.promptAndWait('add numbers', { timeoutMs: GUARD });
      assert.deepEqual(calls.addArgs, [{ a: 2, b: 3 }]);
      assert.equal(textOf(one(turn, 'tool_execution_update').partialResult), 'adding…');
      const end = one(turn, 'tool_execution_end');
      assert.deepEqual([end.toolName, end.isError, textOf(end.result)], ['host_add', false, '5']);
      assert.equal(turn.assistantText, 'sum is 5');
    });

    it('an extension command\'s UI round trip', async () => {
      const before = ws.llmRequests().length;
      const mark = rec.mark();
      // pi answers the /ask prompt only once the command's UI request is answered.
      let settled = false;
      const prompt = client.prompt('/ask', { timeoutMs: GUARD });
      prompt.then(() => (settled = true), () => (settled = true));
      const req = await client.nextUiRequest({ timeoutMs: GUARD });
      assert.deepEqual([req.method, req.title, req.placeholder], ['input', 'Your name?', 'type it']);
      await sleep(300);
      assert.equal(settled, false, 'pi acknowledged /ask before its UI request was answered');
      client.uiSendValue(req.id, 'Alice');
      await prompt;
      const note = await rec.wait('notify', (e) => e.type === 'extension_ui_request' && e.method === 'notify', mark);
      assert.deepEqual([note.message, note.notifyType], ['hello Alice', 'info']);
      await client.waitForIdle({ timeoutMs: GUARD });
      assert.equal(ws.llmRequests().length, before, 'a command never reaches the model');
    });

    it('a command that needs no answer completes promptAndWait', async () => {
      await assertQuietCommandCompletes(ws, client);
    });

    it('abort during a host tool: the handler is cancelled, the turn ends', async () => {
      const before = ws.llmRequests().length;
      const mark = rec.mark();
      const turnP = client.promptAndWait('wait for the host', { timeoutMs: GUARD });
      await calls.waitStarted;
      await client.abort();
      const turn = await turnP;
      const call = await rec.wait('host_tool_call', (e) => e.type === 'host_tool_call', mark);
      const cancel = await rec.wait('host_tool_cancel', (e) => e.type === 'host_tool_cancel', mark);
      assert.equal(cancel.targetId, call.id);
      await rec.wait('the handler\'s cancellation', () => calls.waitCancelled !== null, mark);
      assert.ok(calls.waitCancelled instanceof CancelledError, `${calls.waitCancelled}`);
      const end = one(turn, 'tool_execution_end');
      assert.deepEqual([end.toolName, end.isError, textOf(end.result)], ['host_wait', true, 'cancelled']);
      assert.equal(turn.assistantMessage.stopReason, 'aborted');
      assert.equal(turn.outcome, 'aborted');
      assert.equal(ws.llmRequests().length, before + 1, 'the aborted run made no second LLM call');
      await client.waitForIdle({ timeoutMs: GUARD });
    });

    it('3 MB of tool output', async () => {
      const turn = await client.promptAndWait('big output please', { timeoutMs: GUARD });
      const end = one(turn, 'tool_execution_end');
      assert.deepEqual([end.toolName, end.isError], ['bash', false]);
      // pi cuts what it sends to 50 KiB and keeps the whole output in a file.
      const text = textOf(end.result);
      assert.ok(/^x+$/.test(text.split('\n')[0]) && text.length > 50_000, text.slice(0, 200));
      const { truncation, fullOutputPath } = end.result.details;
      assert.deepEqual([truncation.truncated, truncation.totalBytes], [true, 3_000_000]);
      assert.ok(fullOutputPath.startsWith(ws.tmp + path.sep), fullOutputPath);
      assert.equal(fs.statSync(fullOutputPath).size, 3_000_000);
      assert.equal(turn.assistantText, 'big done');
      assert.deepEqual(client.protocolErrors(), []);
    });

    it('close leaves no process', async () => {
      await assertClosesCleanly(client);
    });
  });

  // --- omp: one client for the set (with turnIdleTimeoutMs, 1 s) ---------------------------

  describe('omp', { skip: ompSkip(), concurrency: false }, () => {
    let ws;
    let client;
    let rec;
    let calls;
    const silentCalls = [];
    before(async () => {
      ws = await Workspace.create('omp', [SAY_HELLO, ADD, HANG, STEER, SLOW, FOLLOW, SILENT]);
      calls = hostCalls();
      const ext = ws.writeFile('ask.mjs', ASK_EXTENSION);
      // loadMode "essential": omp offers the host tools to the model directly.
      client = await ws.start(['--extension', ext], {
        hostTools: [
          { name: 'host_add', description: 'Add two numbers', parameters: ADD_SCHEMA, loadMode: 'essential', handler: calls.add },
          silentHostTool(silentCalls, { loadMode: 'essential' }),
        ],
        turnIdleTimeoutMs: IDLE_TIMEOUT_MS,
      });
      rec = new Recorder(client);
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });
    beforeEach(sayVersion(() => client));

    it('a text turn', async () => {
      const info = client.info();
      assert.deepEqual([info.flavor, info.agentVersion], ['omp', '18.2.3']);
      const turn = await client.promptAndWait('say hello', { timeoutMs: GUARD });
      assert.equal(turn.assistantText, 'Hello from the fake model');
      assert.equal(turn.agentInvoked, true);
      assert.deepEqual([turn.events[0].type, turn.events.at(-1).type], ['agent_start', 'agent_end']);
      assert.deepEqual([turn.outcome, turn.attempts, turn.settled], ['agent_end', 1, false]);
      assert.equal(ws.llmRequests().length, 1);
    });

    it('incremental host registration (protocol 1.1) is refused by omp 18; nothing is kept', async () => {
      const more = { name: 'host_more', description: 'More', parameters: { type: 'object', properties: {} }, handler: () => 'x' };
      await assert.rejects(client.addHostTools([more]), (e) => e instanceof CommandError && /Unknown command: add_host_tools/.test(e.message));
      await assert.rejects(client.removeHostTools(['host_add']), (e) => e instanceof CommandError && /Unknown command: remove_host_tools/.test(e.message));
      await assert.rejects(client.addHostUriSchemes([{ scheme: 'memo', handler: () => 'x' }]), CommandError);
      const names = (await client.getState()).dumpTools.map((t) => t.name);
      assert.ok(names.includes('host_add') && !names.includes('host_more'), `${names}`);
      // host_add keeps its handler: the next test calls it.
    });

    it('a native host tool', async () => {
      // Only this test's extension: host tools are native on omp, no bridge.
      const info = client.info();
      assert.equal(info.argv.filter((a) => a === '--extension').length, 1, 'no bridge on omp');
      assert.equal(info.bridgeLoaded, false);
      const mark = rec.mark();
      const turn = await client.promptAndWait('add numbers', { timeoutMs: GUARD });
      assert.deepEqual(calls.addArgs, [{ a: 2, b: 3 }]);
      const call = await rec.wait('host_tool_call', (e) => e.type === 'host_tool_call', mark);
      assert.equal(call.bridged, undefined);
      const end = one(turn, 'tool_execution_end');
      assert.deepEqual([end.toolName, end.isError, textOf(end.result)], ['host_add', false, '5']);
      assert.equal(turn.assistantText, 'sum is 5');
      assert.ok(toolNames(ws.llmRequests().at(-2)).includes('host_add'));
    });

    it('a command that needs no answer completes promptAndWait (prompt_result)', async () => {
      await assertQuietCommandCompletes(ws, client);
    });

    it('steer then abort: waitForIdle waits for the run omp starts for the steer', async () => {
      const mark = rec.mark();
      await client.prompt('hang please');
      await rec.wait('the first text delta', isTextDelta, mark);
      await client.steer('steer me now');
      await client.abort();
      await client.waitForIdle({ timeoutMs: GUARD });
      const seen = rec.since(mark);
      const ends = ofType(seen, 'agent_end');
      assert.equal(ends.length, 2, `${seen.map((e) => e.type)}`);
      assert.equal(ends[0].messages.at(-1).stopReason, 'aborted');
      assert.equal(textOf(ends[1].messages.at(-1)), 'steered ok');
      const steer = ofType(seen, 'message_end').filter((e) => e.message.steering === true);
      assert.equal(steer.length, 1);
      assert.equal(textOf(steer[0].message), 'steer me now');
      assert.equal((await client.getState()).isStreaming, false);
    });

    it('a follow_up queued during a slow stream runs before waitForIdle returns', async () => {
      await assertFollowUpRunsBeforeIdle(ws, client, rec);
    });

    it('a native host tool working silently outlasts turnIdleTimeoutMs', async () => {
      const mark = rec.mark();
      await assertSilentHostToolOutlastsTheIdleTimeout(client, silentCalls);
      const call = await rec.wait('host_tool_call', (e) => e.type === 'host_tool_call', mark);
      assert.deepEqual([call.toolName, call.bridged], ['host_silent', undefined]);
    });

    it('close leaves no process', async () => {
      await assertClosesCleanly(client);
    });
  });

  // --- omp: the compaction handoff (a client of its own: compaction changes the session) ---

  describe('omp, compaction handoff', { skip: ompSkip(), concurrency: false }, () => {
    let ws;
    let client;
    before(async () => {
      ws = await Workspace.create('omp', [{ match: 'big', replies: [{ text: 'got it' }] }]);
      client = await ws.start();
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });
    beforeEach(sayVersion(() => client));

    it('a prompt over the compaction threshold: the non-terminal agent_end ends the turn', async () => {
      // ~150k tokens by omp's estimate > the 128k window: omp schedules a "handoff" compaction,
      // the run ends with agent_end {isTerminal:false} and nothing follows.
      const turn = await client.promptAndWait(`big ${'x'.repeat(600 * 1024)}`, { timeoutMs: GUARD });
      const types = turn.events.map((e) => e.type);
      assert.ok(types.includes('auto_compaction_start'), `${types}`);
      assert.equal(types.at(-1), 'agent_end', `${types}`);
      assert.equal(turn.events.at(-1).isTerminal, false);
      assert.equal(turn.assistantText, 'got it');
      await client.waitForIdle({ timeoutMs: GUARD });
    });
  });
});
