// Extension UI requests (mirrors tests/c/test_ui.c): nextUiRequest and the three answers,
// close waking a waiter, the headless policy, passive / unknown / dismissed requests, pi.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Client, ClosedError, CommandError, NotFoundError, RpcTimeoutError } from '../index.mjs';
import { WAIT_MS, start, slowToStopOptions, seenAnswer, nextEventOfType, sleep } from './helpers.mjs';

test('UI round trips: value, confirmation, cancel', async (t) => {
  const c = await start(t);
  assert.ok((await c.prompt('needs ui')).length > 0);
  let req = await c.nextUiRequest({ timeoutMs: WAIT_MS });
  assert.equal(req.type, 'extension_ui_request');
  assert.equal(req.method, 'input');
  assert.equal(req.id, 'ui-1');
  c.uiSendValue('ui-1', 'approved');
  await c.waitForIdle({ timeoutMs: WAIT_MS });
  assert.equal((await seenAnswer(c, 'ui-1')).value, 'approved');
  assert.throws(() => c.uiSendValue('ui-1', 'again'), NotFoundError);

  await c.prompt('needs confirm');
  req = await c.nextUiRequest();
  assert.equal(req.method, 'confirm');
  assert.equal(req.id, 'ui-2');
  c.uiSendConfirmation('ui-2', true);
  await c.waitForIdle();
  assert.equal((await seenAnswer(c, 'ui-2')).confirmed, true);

  await c.prompt('needs cancel');
  req = await c.nextUiRequest();
  assert.equal(req.method, 'editor');
  assert.equal(req.id, 'ui-3');
  c.uiCancel('ui-3', { timedOut: true });
  await c.waitForIdle();
  const seen = await seenAnswer(c, 'ui-3');
  assert.equal(seen.cancelled, true);
  assert.equal(seen.timedOut, true);

  assert.throws(() => c.uiSendValue('no-such-request', 'x'), NotFoundError);
  assert.throws(() => c.uiSendConfirmation('no-such-request', false), NotFoundError);
  assert.throws(() => c.uiCancel('no-such-request'), NotFoundError);
  await assert.rejects(c.nextUiRequest({ timeoutMs: 0 }), RpcTimeoutError);
});

test('close wakes a waiting nextUiRequest at once', async () => {
  const c = await Client.start(slowToStopOptions());
  const waiting = c.nextUiRequest({ timeoutMs: 30_000 });
  await sleep(200);
  const t0 = Date.now();
  const closing = c.close();
  const err = await waiting.then(() => null, (e) => e);
  assert.ok(err instanceof ClosedError, String(err));
  assert.ok(Date.now() - t0 < 1500, `woke ${Date.now() - t0} ms after close began`);
  await closing;
});

test('an AbortSignal ends nextUiRequest; a request taken meanwhile is not lost', async (t) => {
  const c = await start(t);
  const ac = new AbortController();
  const waiting = c.nextUiRequest({ signal: ac.signal });
  await sleep(50);
  const t0 = Date.now();
  ac.abort(new Error('changed my mind'));
  await assert.rejects(waiting, /changed my mind/);
  // The wait has no deadline: without the abort it would not end at all.
  assert.ok(Date.now() - t0 < 1500, `rejected ${Date.now() - t0} ms after the abort`);
  // the abandoned poll slice is likely still running and takes the request
  await c.prompt('needs ui');
  // the request (possibly taken by the abandoned poll) is still served
  const req = await c.nextUiRequest({ timeoutMs: WAIT_MS });
  assert.equal(req.id, 'ui-1');
  c.uiSendValue('ui-1', 'ok');
  await c.waitForIdle();
});

test('headless policy', async (t) => {
  const c = await start(t);
  c.setUiPolicy({ confirm: false, select: null, input: null, editor: null });
  const turn = await c.promptAndWait('needs ui');
  assert.equal(turn.assistantText, 'ui acknowledged');
  assert.equal((await seenAnswer(c, 'ui-1')).cancelled, true);
  await c.promptAndWait('unknown ui');
  assert.equal((await seenAnswer(c, 'ui-ask')).cancelled, true);
  await c.promptAndWait('needs confirm');
  assert.equal((await seenAnswer(c, 'ui-2')).confirmed, false);
  c.setUiPolicy({ confirm: true, input: 'typed', editor: 'edited', select: 'b' });
  await c.promptAndWait('needs ui');
  assert.equal((await seenAnswer(c, 'ui-1')).value, 'typed');
  await c.promptAndWait('needs cancel');
  assert.equal((await seenAnswer(c, 'ui-3')).value, 'edited');
  await assert.rejects(c.nextUiRequest({ timeoutMs: 0 }), RpcTimeoutError);
  c.setUiPolicy(null);
  await c.prompt('needs ui');
  assert.equal((await c.nextUiRequest({ timeoutMs: WAIT_MS })).id, 'ui-1');
  c.uiSendValue('ui-1', 'manual');
  await c.waitForIdle({ timeoutMs: WAIT_MS });
});

test('the policy as a start option', async (t) => {
  const c = await start(t, [], { uiPolicy: { input: 'from start' } });
  await c.promptAndWait('needs ui');
  assert.equal((await seenAnswer(c, 'ui-1')).value, 'from start');
});

test('passive and dismissed requests', async (t) => {
  const c = await start(t);
  const turn = await c.promptAndWait('passive ui');
  assert.equal(turn.assistantText, 'pong');
  await assert.rejects(c.nextUiRequest({ timeoutMs: 0 }), RpcTimeoutError);
  let n = 0;
  for (;;) {
    try {
      await nextEventOfType(c, 'extension_ui_request', 500);
      n++;
    } catch (e) {
      assert.ok(e instanceof RpcTimeoutError, String(e));
      break;
    }
  }
  assert.equal(n, 4);
  await c.promptAndWait('ui dismiss');
  assert.throws(() => c.uiSendValue('ui-5', 'a'), NotFoundError);
  await c.promptAndWait('ui then tool');
  let req;
  do req = await c.nextUiRequest({ timeoutMs: WAIT_MS });
  while (req.id !== 'ui-9');
  c.uiSendValue('ui-9', 'late');
  assert.equal((await seenAnswer(c, 'ui-9')).value, 'late');
});

test('pi flavour: no ready frame, UI before the prompt response, id-less failures', async (t) => {
  const c = await start(t, ['--flavor', 'pi'], { flavor: 'pi' });
  assert.equal(c.info().flavor, 'pi');
  assert.equal((await c.getState()).sessionId, 'fake-session');
  assert.equal((await c.promptAndWait('say hello')).assistantText, 'pong');
  const answers = [
    ['needs ui', (id) => c.uiSendValue(id, 'approved')],
    ['needs confirm', (id) => c.uiSendConfirmation(id, true)],
    ['needs cancel', (id) => c.uiCancel(id)],
  ];
  for (const [message, answer] of answers) {
    const prompted = c.prompt(message);
    const req = await c.nextUiRequest({ timeoutMs: WAIT_MS });
    answer(req.id);
    assert.ok((await prompted).length > 0);
    await c.waitForIdle({ timeoutMs: WAIT_MS });
  }
  await assert.rejects(c.request('set_host_tools', { tools: [] }), (e) => e instanceof CommandError && e.command === 'set_host_tools');
});
