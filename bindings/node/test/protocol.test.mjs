// The typed protocol generated from src/protocol/table.json (lib/protocol.gen.cjs): the command
// methods against the fake agent (omp by default; pi with --flavor pi), their argument checks,
// and the events and UI requests as the binding hands them out (isKnownEvent /
// isKnownUiRequest; their TypeScript types are checked by test/types/protocol.mts).
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  Client, CommandError, InvalidArgumentError, EVENT_TYPES, UI_METHODS, isKnownEvent, isKnownUiRequest,
} from '../index.mjs';
import { WAIT_MS, start, nextOfType } from './helpers.mjs';

const opts = { timeoutMs: WAIT_MS };

test('the generated commands are Client methods, installed once', () => {
  for (const name of ['getState', 'bash', 'getAvailableModels', 'cycleModel', 'compact', 'fork', 'setSteeringMode', 'getMessagesPage']) {
    assert.equal(typeof Client.prototype[name], 'function', name);
    assert.equal(Object.getOwnPropertyDescriptor(Client.prototype, name).enumerable, false, name);
  }
  // the library's own entry points are not generated over
  for (const name of ['prompt', 'steer', 'followUp', 'abort', 'abortAndPrompt', 'setHostTools', 'setHostUriSchemes']) {
    assert.equal(typeof Client.prototype[name], 'function', name);
  }
  assert.equal(Client.prototype.negotiateProtocol, undefined);
});

test('commands without params resolve their data', async (t) => {
  const c = await start(t);
  const models = await c.getAvailableModels(opts);
  assert.deepEqual(models.models.map((m) => m.id), ['claude-sonnet-4-5', 'claude-sonnet-4-6']);
  const cycled = await c.cycleModel();
  assert.equal(cycled.model.id, 'claude-sonnet-4-6');
  assert.equal(cycled.isScoped, false);
  assert.equal((await c.getState()).model.id, 'claude-sonnet-4-6');
  assert.equal((await c.getSessionStats()).sessionId, 'fake-session');
  assert.deepEqual(await c.getAvailableCommands(), { commands: [] });
  assert.deepEqual(await c.getSubagents({ timeoutMs: null }), { subagents: [] });
  assert.equal(await c.handoff(), null); // nullable data: null
});

test('commands without data resolve undefined; required params are positional', async (t) => {
  const c = await start(t);
  assert.equal(await c.setSteeringMode('one-at-a-time'), undefined); // the agent sends {}: no data in the table
  assert.equal(await c.setFollowUpMode('all', opts), undefined);
  assert.equal(await c.setAutoCompaction(false), undefined);
  assert.equal(await c.setSessionName('Typed'), undefined);
  assert.equal(await c.setThinkingLevel('high'), undefined);
  assert.equal(await c.abortBash(), undefined);
  const s = await c.getState();
  assert.equal(s.steeringMode, 'one-at-a-time');
  assert.equal(s.followUpMode, 'all');
  assert.equal(s.autoCompactionEnabled, false);
  assert.equal(s.sessionName, 'Typed');
  assert.equal(s.thinkingLevel, 'high');
  assert.equal((await c.setModel('anthropic', 'claude-sonnet-4-6')).id, 'claude-sonnet-4-6');
  assert.equal((await c.branch('entry-7')).text, 'branch created');
  assert.equal((await c.getBranchMessages()).messages[0].entryId, 'entry-7');
  assert.deepEqual(await c.setFastMode(true), { enabled: true, active: true });
  assert.deepEqual(await c.setSubagentSubscription('progress'), { level: 'progress' });
  const todos = await c.setTodos([{ id: 'p', name: 'Todos', tasks: [{ id: 't', content: 'Type it', status: 'pending' }] }]);
  assert.equal(todos.todoPhases[0].tasks[0].content, 'Type it');
});

test('optional params go in the options object, with timeoutMs', async (t) => {
  const c = await start(t);
  assert.equal((await c.exportHtml()).path, '/tmp/session.html');
  assert.equal((await c.exportHtml({ outputPath: '/tmp/typed.html', timeoutMs: WAIT_MS })).path, '/tmp/typed.html');
  assert.equal((await c.compact({ customInstructions: 'keep the plan' })).summary, 'trimmed');
  assert.equal((await c.compact()).summary, 'trimmed');
  assert.equal((await c.newSession({ parentSession: '/tmp/parent.jsonl' })).cancelled, false);
  const page = await c.getMessagesPage({ limit: 5 });
  assert.ok(Array.isArray(page.messages));
  // the options object's other keys are not sent
  assert.equal((await c.exportHtml({ outputPath: undefined, unrelated: 'x' })).path, '/tmp/session.html');
});

test('the agent refusing a command rejects with CommandError', async (t) => {
  const c = await start(t); // omp: refuses pi's fork / clone
  await assert.rejects(c.fork('entry-1', opts), (e) => e instanceof CommandError && e.command === 'fork');
  await assert.rejects(c.clone(), CommandError);
  await assert.rejects(c.getSubagentMessages({ subagentId: 'nobody' }), (e) => e instanceof CommandError && /nobody/.test(e.error));
  assert.equal((await c.getState()).sessionId, 'fake-session'); // the client is still usable
});

test('pi: fork, clone, get_fork_messages, get_commands; omp-only commands refused', async (t) => {
  const c = await start(t, ['--flavor', 'pi'], { flavor: 'pi' });
  assert.deepEqual(await c.getForkMessages(), { messages: [{ entryId: '5681c403', text: 'say hello' }] });
  assert.deepEqual(await c.fork('5681c403'), { text: 'say hello', cancelled: false });
  assert.deepEqual(await c.clone(), { cancelled: false });
  assert.equal((await c.getCommands()).commands[0].name, 'quiet');
  await assert.rejects(c.getSubagents(), CommandError);
});

test('arguments are checked before anything is sent', async (t) => {
  const c = await start(t);
  await assert.rejects(c.fork(42), { name: 'TypeError', message: 'entryId must be a string' });
  await assert.rejects(c.bash('a\0b'), InvalidArgumentError); // as the hand-written bash did
  await assert.rejects(c.setAutoRetry('yes'), { name: 'TypeError', message: 'enabled must be a boolean' });
  await assert.rejects(c.getMessagesPage({ limit: 1.5 }), { name: 'TypeError', message: 'limit must be an integer' });
  await assert.rejects(c.setTodos({}), { name: 'TypeError', message: 'phases must be an array' });
  await assert.rejects(c.compact({ customInstructions: 7 }), TypeError);
  await assert.rejects(c.getState({ timeoutMs: -5 }), RangeError);
  assert.equal((await c.getState()).sessionId, 'fake-session');
});

test('events are handed out as plain objects; isKnownEvent tells the table\'s types', async (t) => {
  const c = await start(t);
  assert.ok(EVENT_TYPES.includes('agent_end') && EVENT_TYPES.includes('host_tool_call'));
  assert.ok(!EVENT_TYPES.includes('rpc_chunk'), 'the library consumes rpc_chunk itself');
  assert.ok(Object.isFrozen(EVENT_TYPES) && Object.isFrozen(UI_METHODS));
  const ends = [];
  c.on('agent_end', (ev) => ends.push(ev));
  const it = c.events();
  const turn = await c.promptAndWait('say hello', opts);
  const update = await nextOfType(it, 'message_update');
  assert.ok(isKnownEvent(update));
  assert.equal(typeof update.message, 'object');
  assert.equal(typeof update.assistantMessageEvent.type, 'string');
  const end = await nextOfType(it, 'agent_end');
  await it.return();
  assert.ok(isKnownEvent(end) && Array.isArray(end.messages));
  assert.equal(ends.length, 1);
  assert.deepEqual(ends[0], end);
  for (const ev of turn.events) {
    // lazily parsed Proxies: the guard reads only `type`
    assert.equal(isKnownEvent(ev), EVENT_TYPES.includes(ev.type), ev.type);
  }
  assert.ok(turn.events.some((ev) => ev.type === 'agent_end' && isKnownEvent(ev)));
  // events the table does not name (omprpc's own, a newer agent's) are UnknownEvents
  assert.equal(isKnownEvent({ type: 'event_overflow', dropped: 3, omprpc: true }), false);
  assert.equal(isKnownEvent({ type: 'some_future_event' }), false);
  assert.equal(isKnownEvent(null), false);
  assert.equal(isKnownEvent('agent_end'), false);
});

test('UI requests: isKnownUiRequest tells the table\'s methods', async (t) => {
  const c = await start(t);
  await c.prompt('needs ui');
  const req = await c.nextUiRequest(opts);
  assert.equal(req.method, 'input');
  assert.ok(isKnownUiRequest(req));
  assert.equal(typeof req.title, 'string');
  c.uiSendValue(req.id, 'typed');
  await c.waitForIdle(opts);
  assert.deepEqual([...UI_METHODS].sort().slice(0, 3), ['cancel', 'confirm', 'editor']);
  assert.equal(isKnownUiRequest({ type: 'extension_ui_request', id: 'x', method: 'future_widget' }), false);
  assert.equal(isKnownUiRequest({ type: 'agent_end', method: 'confirm' }), false);
});
