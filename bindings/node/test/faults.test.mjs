// Faults (mirrors tests/c/test_faults.c): broken and early-exiting agents, startup
// timeouts, crashes and hangs, invalid frames, stdout closed, stderr floods, chunk
// violations, process-group teardown, duplicate responses.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Client, ClosedError, ProcessExitedError, ProtocolError, RpcTimeoutError, OmprpcError,
} from '../index.mjs';
import { WAIT_MS, start, fakeOptions, nextOfType, sleep } from './helpers.mjs';

test('a broken startup frame is a ProtocolError quoting it', async () => {
  await assert.rejects(Client.start(fakeOptions(['--scenario', 'broken-startup'])), (e) => {
    assert.ok(e instanceof ProtocolError, String(e));
    assert.match(e.message, /Frame: 'not-json'/);
    return true;
  });
});

test('an agent exiting before ready: ProcessExitedError with exit code and stderr', async () => {
  await assert.rejects(Client.start(fakeOptions(['--scenario', 'exit-early'])), (e) => {
    assert.ok(e instanceof ProcessExitedError, String(e));
    assert.match(e.message, /boom: no model configured/);
    assert.match(e.message, /code 1/);
    return true;
  });
});

test('startup timeouts and handshakes', async (t) => {
  let t0 = Date.now();
  await assert.rejects(Client.start(fakeOptions(['--scenario', 'silent'], { startupTimeoutMs: 300 })), RpcTimeoutError);
  assert.ok(Date.now() - t0 < 5000);
  await assert.rejects(Client.start(fakeOptions(['--scenario', 'slow-start'], { startupTimeoutMs: 100 })), RpcTimeoutError);
  await (await Client.start(fakeOptions(['--scenario', 'slow-start']))).close();
  t0 = Date.now();
  const none = await Client.start(fakeOptions(['--scenario', 'silent'], { handshake: 'none' }));
  assert.ok(Date.now() - t0 < 2000);
  await none.close();
  await (await Client.start(fakeOptions(['--flavor', 'pi'], { handshake: 'probe' }))).close();
});

test('a crash mid-turn: ProcessExitedError with the stderr tail; the client is finished', async (t) => {
  const c = await start(t);
  const it = c.events();
  await assert.rejects(c.promptAndWait('crash'), (e) => {
    assert.ok(e instanceof ProcessExitedError, String(e));
    assert.match(e.message, /fatal: crashed/);
    return true;
  });
  const t0 = Date.now();
  await assert.rejects(c.getState(), (e) => e instanceof ClosedError || e instanceof ProcessExitedError);
  assert.ok(Date.now() - t0 < 1000);
  assert.equal(c.info().closed, true);
  // the event stream delivers what came before the crash, then ends by itself
  const types = [];
  for await (const ev of it) types.push(ev.type);
  assert.ok(types.includes('agent_start'), types.join());
  await c.close();
});

test('invalid frames are fatal by default', async (t) => {
  const c = await start(t, ['--scenario', 'invalid-json']);
  await assert.rejects(c.getState(), (e) => e instanceof ProtocolError || e instanceof ClosedError);
  await assert.rejects(c.getState(), ClosedError);
  const info = c.info();
  assert.equal(info.closed, true);
  assert.match(JSON.stringify(info.closeReason), /Frame: '\{\\"type\\":\\"broken\\"'/);
  const g = await start(t);
  await assert.rejects(g.promptAndWait('garbage'), (e) => e instanceof ProtocolError || e instanceof ClosedError);
});

test('invalid frames skipped: recorded and reported as events', async (t) => {
  const c = await start(t, [], { invalidFrames: 'skip' });
  const it = c.events({ types: ['protocol_error'] });
  assert.equal((await c.promptAndWait('garbage')).assistantText, 'pong');
  const errors = c.protocolErrors();
  assert.equal(errors.length, 1);
  assert.match(JSON.stringify(errors), /this is not json/);
  const ev = await nextOfType(it, 'protocol_error');
  assert.equal(ev.omprpc, true);
  await it.return();
  const u = await start(t, ['--scenario', 'invalid-utf8'], { invalidFrames: 'skip' });
  await u.getState();
  assert.equal(u.protocolErrors().length, 1);
});

test('stdout closed early and a half line', async (t) => {
  for (const scenario of ['stdout-close', 'half-line']) {
    const c = await start(t, ['--scenario', scenario]);
    const t0 = Date.now();
    await assert.rejects(c.getState(), (e) =>
      e instanceof ProcessExitedError || e instanceof ClosedError || (scenario === 'half-line' && e instanceof ProtocolError));
    assert.ok(Date.now() - t0 < 3000);
  }
});

test('stderr lines and a 50 MB stderr flood', async (t) => {
  const c = await Client.start(fakeOptions([], { maxStderrLines: 3 }));
  await c.promptAndWait('stderr 5');
  await c.close();
  assert.equal(c.stderr(), 'stderr line 3\nstderr line 4\nstderr line 5\n');
  const f = await start(t, ['--scenario', 'stderr-flood'], { maxStderrLines: 10 });
  await f.promptAndWait('say hello');
  await f.getState();
  assert.ok(f.stderr().length <= 10 * 1001 + 16);
});

test('a v2 chunk violation', async () => {
  let c = null;
  try {
    c = await Client.start(fakeOptions(['--scenario', 'chunk-violation']));
  } catch (e) {
    assert.ok(e instanceof ProtocolError, String(e));
    return;
  }
  await assert.rejects(c.getState(), (e) => e instanceof ProtocolError || e instanceof ClosedError);
  await c.close();
});

function read(p) {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return null;
  }
}

async function waitFile(p) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    if (read(p) !== null) return true;
    await sleep(10);
  }
  return false;
}

async function checkGrandchildKilled(t, viaPrompt) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-gc-'));
  const base = path.join(dir, 'gc');
  let pid = 0;
  t.after(() => {
    if (pid > 0) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const c = viaPrompt
    ? await Client.start(fakeOptions([], { stopGraceMs: 200 }))
    : await Client.start(fakeOptions(['--scenario', 'grandchild'], { env: { OMPRPC_FAKE_GRANDCHILD: base }, stopGraceMs: 200 }));
  if (viaPrompt) await c.promptAndWait(`grandchild ${base}`);
  assert.ok((await waitFile(base + '.pid')) && (await waitFile(base + '.beat')), 'the grandchild never started');
  pid = Number(read(base + '.pid'));
  assert.ok(pid > 0);
  const b1 = read(base + '.beat');
  const t0 = Date.now();
  while (read(base + '.beat') === b1 && Date.now() - t0 < WAIT_MS) await sleep(20);
  assert.notEqual(read(base + '.beat'), b1, 'the heartbeat never moved');
  const t1 = Date.now();
  await c.close();
  assert.ok(Date.now() - t1 < 5000);
  await sleep(100);
  const a = read(base + '.beat');
  await sleep(300);
  assert.equal(read(base + '.beat'), a, 'the grandchild kept running after close');
}

test('close kills the agent\'s process group (grandchild at start)', async (t) => checkGrandchildKilled(t, false));
test('close kills the agent\'s process group (grandchild mid-session)', async (t) => checkGrandchildKilled(t, true));

test('close kills an agent that ignores SIGTERM', async () => {
  const c = await Client.start(fakeOptions(['--scenario', 'ignore-term'], { stopGraceMs: 200, killGraceMs: 200 }));
  const { pid } = c.info();
  const t0 = Date.now();
  await c.close();
  assert.ok(Date.now() - t0 < 5000);
  assert.throws(() => process.kill(pid, 0), (e) => e.code === 'ESRCH');
});

test('a duplicate response changes nothing', async (t) => {
  const c = await start(t);
  assert.equal((await c.promptAndWait('duplicate response')).assistantText, 'pong');
  const errors = c.protocolErrors();
  assert.ok(errors.length === 0 || (errors.length === 1 && /req_/.test(JSON.stringify(errors))));
  assert.ok(!(errors instanceof OmprpcError));
});
