// Basics (mirrors tests/c/test_basics.c): versions and status names, the argv builder and
// option conversion, start / getState / bash / info, every command through request(),
// invalid inputs, close semantics, many concurrent calls on one client.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as omprpc from '../index.mjs';
import { Client, ClosedError, CommandError, InvalidJsonError, InvalidArgumentError, OmprpcError, Status } from '../index.mjs';
import { FAKE, WAIT_MS, start, fakeOptions } from './helpers.mjs';

test('version, ABI and status names', () => {
  omprpc.load();
  assert.equal(omprpc.abiVersion(), omprpc.ABI_VERSION);
  assert.match(omprpc.version(), /^\d+\.\d+\.\d+/);
  assert.ok(omprpc.libraryPath());
  assert.equal(omprpc.TIMEOUT_INFINITE, -1);
  assert.equal(omprpc.TIMEOUT_DEFAULT, -2);
  const names = Object.keys(Status);
  assert.equal(names.length, 15);
  names.forEach((name, i) => {
    assert.equal(Status[name], i);
    assert.equal(omprpc.statusName(i), name);
  });
  assert.equal(omprpc.statusName(15), 'UNKNOWN');
  assert.equal(omprpc.statusName(-1), 'UNKNOWN');
});

test('a missing library or an ABI mismatch is a clear error', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const index = JSON.stringify(new URL('../index.cjs', import.meta.url).pathname);
  const run = (env, code) => spawnSync(process.execPath, ['-e', `const o = require(${index}); ${code}`], { encoding: 'utf8', env: { ...process.env, ...env } });
  let r = run({ OMPRPC_LIBRARY: '/nonexistent/libomprpc.so' }, 'try { o.version() } catch (e) { console.log(e.message) }');
  assert.match(r.stdout, /cannot find the omprpc shared library.*OMPRPC_LIBRARY/s);
  assert.match(r.stdout, /\/nonexistent\/libomprpc\.so/);
  // a library of another ABI: a stand-in built with the C compiler, when there is one
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-abi-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'abi.c'), 'unsigned omprpc_abi_version(void) { return 999; }\n');
  const cc = spawnSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-o', path.join(dir, 'libomprpc.so'), path.join(dir, 'abi.c')]);
  if (cc.status !== 0) {
    t.diagnostic('no C compiler: ABI mismatch case skipped');
    return;
  }
  r = run({ OMPRPC_LIBRARY: path.join(dir, 'libomprpc.so') }, 'try { o.version() } catch (e) { console.log(e.message) }');
  assert.match(r.stdout, /ABI mismatch: .* has ABI version 999, this binding .* needs 2/);
});

test('buildArgv and camelCase options', () => {
  assert.deepEqual(omprpc.buildArgv({}), ['omp', '--mode', 'rpc', '--no-title']);
  assert.deepEqual(omprpc.buildArgv({ noTitle: false }), ['omp', '--mode', 'rpc']);
  assert.deepEqual(
    omprpc.buildArgv({ provider: 'anthropic', model: 'm', sessionDir: '/s', tools: [] }),
    ['omp', '--mode', 'rpc', '--provider', 'anthropic', '--model', 'm', '--session-dir', '/s', '--no-tools', '--no-title'],
  );
  assert.deepEqual(
    omprpc.buildArgv({ appendSystemPrompt: 'x', noSession: true, extraArgs: ['--foo'] }),
    ['omp', '--mode', 'rpc', '--append-system-prompt', 'x', '--no-session', '--no-title', '--foo'],
  );
  assert.deepEqual(omprpc.buildArgv({ command: ['/bin/agent', '--x'], model: 'ignored' }), ['/bin/agent', '--x']);
  // nested values are not converted
  assert.deepEqual(omprpc.toCoreOptions({ maxEventHistory: null, env: { myVar: '1' }, closeOnExit: false }), {
    max_event_history: null,
    env: { myVar: '1' },
  });
  assert.throws(() => omprpc.buildArgv({ flavor: 'bogus' }), InvalidArgumentError);
  assert.throws(() => omprpc.buildArgv({ command: 'omp --mode rpc' }), InvalidArgumentError);
  // one spelling per option: an unknown or snake_case key is INVALID_ARGUMENT naming it
  assert.throws(() => omprpc.buildArgv({ unknownKey: 1 }), (e) =>
    e instanceof InvalidArgumentError && e.code === 'INVALID_ARGUMENT' && e.message === 'unknown option "unknownKey"');
  assert.throws(() => omprpc.buildArgv({ max_event_history: 1 }), (e) =>
    e instanceof InvalidArgumentError &&
    e.message === 'unknown option "max_event_history": it is spelled "maxEventHistory" here (camelCase)');
  assert.throws(() => omprpc.toCoreOptions({ close_on_exit: false }), /"close_on_exit": it is spelled "closeOnExit"/);
});

test('StartOptions: every declared option is accepted here and known to the core', () => {
  // The keys of index.d.cts's StartOptions (the one list a program sees).
  const dts = readFileSync(new URL('../index.d.cts', import.meta.url), 'utf8');
  const body = /export interface StartOptions \{([\s\S]*?)\n\}/.exec(dts)[1];
  const keys = [...body.matchAll(/^  ([a-zA-Z0-9]+)\?:/gm)].map((m) => m[1]);
  assert.ok(keys.length > 60, `${keys.length} options`);
  for (const k of keys) {
    assert.doesNotMatch(k, /_/, 'camelCase only');
    if (['closeOnExit', 'ref', 'libraryPath', 'signal'].includes(k)) continue; // the binding's
    try {
      omprpc.buildArgv({ [k]: null }); // null: some take it; the others say what they want
    } catch (e) {
      assert.ok(e instanceof InvalidArgumentError, `${k}: ${e.stack}`);
      assert.doesNotMatch(e.message, /unknown option/, k);
    }
  }
});

test('start, getState, bash, info, the ready event', async (t) => {
  const c = await start(t);
  const s = await c.getState();
  assert.equal(s.sessionId, 'fake-session');
  assert.equal(s.model.id, 'claude-sonnet-4-5');
  await c.getState({ timeoutMs: omprpc.TIMEOUT_DEFAULT });
  await c.getState({ timeoutMs: null });
  await c.getState({ timeoutMs: Infinity });
  const b = await c.bash('echo hello');
  assert.equal(b.output, 'hello\n');
  assert.equal(b.exitCode, 0);
  const info = c.info();
  assert.ok(info.pid > 0);
  assert.deepEqual(info.argv, [FAKE]);
  assert.equal(info.flavor, 'omp');
  assert.equal(info.closed, false);
  assert.equal(info.protocolVersion, 1);
  const ev = await c.nextEvent({ timeoutMs: WAIT_MS });
  assert.equal(ev.type, 'ready');
  assert.equal(typeof c.eventFd(), 'number');
  // Windows' event handle: the core refuses it elsewhere, naming the descriptor to use.
  assert.throws(() => c.eventHandle(), (e) => e instanceof InvalidArgumentError && /omprpc_client_event_fd/.test(e.message));
  await c.close();
  assert.equal(c.info().closed, true);
});

test('every command through request()', async (t) => {
  const c = await start(t);
  const req = (type, params) => c.request(type, params, { timeoutMs: WAIT_MS });
  assert.equal((await req('get_state')).sessionId, 'fake-session');
  assert.equal((await req('get_state', {})).sessionId, 'fake-session');
  assert.equal((await req('set_model', { provider: 'anthropic', modelId: 'claude-sonnet-4-6' })).id, 'claude-sonnet-4-6');
  assert.equal((await req('cycle_model')).model.id, 'claude-sonnet-4-5');
  const models = await req('get_available_models');
  assert.deepEqual(models.models.map((m) => m.id), ['claude-sonnet-4-5', 'claude-sonnet-4-6']);
  await req('set_thinking_level', { level: 'high' });
  assert.equal((await req('get_state')).thinkingLevel, 'high');
  assert.equal((await req('cycle_thinking_level')).level, 'low');
  await req('set_steering_mode', { mode: 'all' });
  await req('set_follow_up_mode', { mode: 'all' });
  await req('set_interrupt_mode', { mode: 'wait' });
  await req('set_auto_compaction', { enabled: false });
  await req('set_auto_retry', { enabled: false });
  await req('set_session_name', { name: 'Renamed' });
  const s = await req('get_state');
  assert.equal(s.steeringMode, 'all');
  assert.equal(s.followUpMode, 'all');
  assert.equal(s.interruptMode, 'wait');
  assert.equal(s.autoCompactionEnabled, false);
  assert.equal(s.sessionName, 'Renamed');
  assert.equal((await req('compact')).summary, 'trimmed');
  const stats = await req('get_session_stats');
  assert.equal(stats.sessionId, 'fake-session');
  assert.equal(stats.tokens.total, 15);
  assert.equal((await req('export_html', { outputPath: '/tmp/custom.html' })).path, '/tmp/custom.html');
  assert.equal((await req('new_session')).cancelled, false);
  assert.equal((await req('switch_session', { sessionPath: '/tmp/session.jsonl' })).cancelled, false);
  assert.equal((await req('branch', { entryId: 'entry-9' })).text, 'branch created');
  assert.equal((await req('get_branch_messages')).messages[0].entryId, 'entry-9');
  const todos = await req('set_todos', {
    phases: [{ id: 'phase-1', name: 'Todos', tasks: [{ id: 'task-1', content: 'Map tools', status: 'pending' }] }],
  });
  assert.equal(todos.todoPhases[0].tasks[0].content, 'Map tools');
  assert.equal((await req('get_state')).todoPhases[0].name, 'Todos');
  await req('get_messages');
  await req('get_last_assistant_text');
  await req('abort_retry');
  await req('abort_bash');
  await req('steer', { message: 'nudge' });
  await req('follow_up', { message: 'later' });
  await req('abort');
  assert.equal(await req('handoff'), null);
  await c.steer('nudge');
  await c.followUp('later');
  await c.abort();
  c.sendFrame({ type: 'widget_layout', widgetKey: 'w', visible: true, availableWidth: 80, visibleRows: 3, hiddenBlocks: ['b'] });
  await assert.rejects(req('no_such_command'), (e) => {
    assert.ok(e instanceof CommandError);
    assert.ok(e instanceof OmprpcError);
    assert.equal(e.status, Status.COMMAND_FAILED);
    assert.equal(e.code, 'COMMAND_FAILED');
    assert.equal(e.command, 'no_such_command');
    assert.equal(e.error, 'unsupported: no_such_command');
    return true;
  });
  assert.equal((await req('get_state')).sessionId, 'fake-session');
});

test('invalid inputs', async (t) => {
  await assert.rejects(Client.start({ command: 'not an array' }), InvalidArgumentError);
  await assert.rejects(Client.start([]), TypeError);
  const c = await start(t);
  await assert.rejects(c.request('get_state', [1, 2]), InvalidJsonError);
  assert.throws(() => c.sendFrame('nope'), InvalidJsonError);
  assert.throws(() => c.sendFrame({ no: 'type' }), OmprpcError);
  await assert.rejects(c.prompt('hi', { images: 'not an array' }), OmprpcError);
  assert.throws(() => c.setUiPolicy({ confirm: 'maybe' }), InvalidArgumentError);
  assert.throws(() => c.setUiPolicy({ bogus: null }), InvalidArgumentError);
  await assert.rejects(c.setHostUriSchemes({ scheme: 'x' }), TypeError);
  // NUL inside a string would be cut at the C boundary: refused instead
  await assert.rejects(c.bash('echo a\0b'), InvalidArgumentError);
  await assert.rejects(c.request('get_state', null, { timeoutMs: -5 }), RangeError);
  await assert.rejects(c.request(42), TypeError);
  // unknown ids are NOT_FOUND
  assert.throws(() => c.hostToolResult('no-such-call', 'x'), (e) => e.code === 'NOT_FOUND' && e instanceof omprpc.NotFoundError);
  assert.throws(() => c.uiSendValue('no-such-request', 'x'), omprpc.NotFoundError);
  // still alive
  assert.equal((await c.getState()).sessionId, 'fake-session');
});

test('close is idempotent; calls fail fast with ClosedError; queued events still drain', async (t) => {
  const c = await Client.start(fakeOptions());
  const p1 = c.close();
  const p2 = c.close();
  assert.equal(p1, p2);
  await p1;
  await c.close();
  assert.equal(c.closed, true);
  const t0 = Date.now();
  await assert.rejects(c.getState(), ClosedError);
  await assert.rejects(c.promptAndWait('say hello'), ClosedError);
  await assert.rejects(c.prompt('say hello'), ClosedError);
  await assert.rejects(c.bash('true'), ClosedError);
  await assert.rejects(c.nextUiRequest({ timeoutMs: WAIT_MS }), ClosedError);
  assert.throws(() => c.uiSendValue('ui-1', 'x'), ClosedError);
  assert.ok(Date.now() - t0 < 1000);
  // the ready event queued before close is delivered, then the stream ends
  const seen = [];
  for await (const ev of c.events()) seen.push(ev.type);
  assert.deepEqual(seen, ['ready']);
  await assert.rejects(c.nextEvent({ timeoutMs: WAIT_MS }), ClosedError);
  assert.equal(c.info().closed, true);
  assert.equal(typeof c.stderr(), 'string');
  assert.deepEqual(c.protocolErrors(), []);
});

test('stderr ring is bounded and readable after close', async () => {
  const c = await Client.start(fakeOptions(['--scenario', 'stderr'], { maxStderrLines: 1 }));
  await c.close();
  assert.equal(c.stderr(), 'second\n');
});

test('many concurrent calls share one client', async (t) => {
  const c = await start(t);
  const calls = [];
  for (let i = 0; i < 200; i++) calls.push(c.getState({ timeoutMs: WAIT_MS }));
  const states = await Promise.all(calls);
  assert.equal(states.filter((s) => s.sessionId === 'fake-session').length, 200);
});

test('argv and env reach the agent; the parent environment does not leak', async (t) => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-env-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const argvf = path.join(dir, 'argv.json');
  const envf = path.join(dir, 'env.json');
  const c = await start(t, ['--model', 'm'], { env: { OMPRPC_FAKE_ARGV_FILE: argvf, OMPRPC_FAKE_ENV_FILE: envf, OMPRPC_TEST_MARK: 'x y' } });
  assert.deepEqual(JSON.parse(fs.readFileSync(argvf, 'utf8')), ['--model', 'm']);
  const env = JSON.parse(fs.readFileSync(envf, 'utf8'));
  assert.equal(env.OMPRPC_TEST_MARK, 'x y');
  assert.equal(env.PATH, process.env.PATH); // the default: the allow-list (docs/c-api.md)
  await c.close();
});
