// The generated koffi structs and structured-result declarations (lib/native.gen.cjs), read
// against the library: a low-level test of the declarations (the binding's API builds on them:
// lib/turn.cjs, lib/views.cjs; test/prompt.test.mjs). The layout is checked by the library itself: it writes a whole
// omprpc_turn_info (its own size) into a sentinel-filled buffer, which koffi then decodes with
// the generated type; the arrays of views have the library's stride only if every view matches
// its event in the JSON form.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { FAKE, WAIT_MS } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { load, native, getKoffi, structTypes, libraryPath, take } = require('../lib/native.cjs');
const { TurnOutcome } = require('../lib/native.gen.cjs');

load();
const koffi = getKoffi();
const N = native();
const T = structTypes();

/** An omprpc_str's text; null when absent (data NULL). */
function text(s) {
  if (s.data === null || s.data === 0n) {
    assert.equal(Number(s.len), 0);
    return null;
  }
  return koffi.decode.string(s.data, Number(s.len));
}

function parsed(s) {
  const t = text(s);
  return t === null ? null : JSON.parse(t);
}

function ok(st, err) {
  if (st !== 0) assert.fail(`status ${st}: ${take(err[0])}`);
}

/** A fake-agent client (raw handle), freed when the test ends. */
function startClient(t) {
  const out = [null];
  const err = [null];
  ok(N.start(JSON.stringify({ command: [FAKE] }), out, err), err);
  t.after(() => {
    const closeErr = [null];
    N.close(out[0], closeErr);
    take(closeErr[0]);
    N.free(out[0]);
  });
  return out[0];
}

function promptTurn(t, client, message) {
  const turn = [null];
  const err = [null];
  ok(N.promptAndWaitTurn(client, message, null, WAIT_MS, turn, err), err);
  assert.ok(turn[0]);
  t.after(() => N.turnFree(turn[0]));
  return turn[0];
}

/** `fn(obj, &array, &count, &err)`: the array decoded as `count` structs of `type`. */
function views(fn, obj, type) {
  const arr = [null];
  const count = [0];
  const err = [null];
  ok(fn(obj, arr, count, err), err);
  const n = Number(count[0]);
  return n === 0 ? [] : koffi.decode(arr[0], type, n);
}

test('the generated structs follow the header', () => {
  assert.deepEqual(Object.keys(T), ['omprpc_str', 'omprpc_event_view', 'omprpc_turn_info']);
  assert.deepEqual(Object.keys(T.omprpc_str.members), ['data', 'len']);
  assert.deepEqual(Object.keys(T.omprpc_turn_info.members).slice(0, 3), ['outcome', 'agent_invoked', 'event_count']);
  assert.deepEqual(TurnOutcome, { AGENT_END: 0, PROMPT_RESULT: 1, NOT_INVOKED: 2, AGENT_SETTLED: 3, ABORTED: 4 });
  if (koffi.sizeof('void *') === 8) {
    assert.deepEqual([koffi.sizeof(T.omprpc_str), koffi.sizeof(T.omprpc_event_view), koffi.sizeof(T.omprpc_turn_info)], [16, 32, 216]);
    assert.equal(koffi.offsetof(T.omprpc_turn_info, 'agent_invoked'), 4);
    assert.equal(koffi.offsetof(T.omprpc_turn_info, 'turn_json'), 160);
    assert.deepEqual(['attempts', 'settled', 'failed_attempts_json', 'compactions_json'].map((m) => koffi.offsetof(T.omprpc_turn_info, m)), [176, 180, 184, 200]);
  }
});

test('a turn read through the generated declarations', (t) => {
  const client = startClient(t);
  const turn = promptTurn(t, client, 'say hello');

  // The library's own struct size: written into a sentinel-filled buffer twice ours.
  const size = koffi.sizeof(T.omprpc_turn_info);
  const buf = Buffer.alloc(2 * size, 0xa5);
  const raw = koffi.load(libraryPath()).func('int omprpc_turn_get_info(void *turn, void *out_info, _Out_ void **out_error)');
  const rawErr = [null];
  ok(raw(turn, buf, rawErr), rawErr);
  assert.ok(buf.subarray(size).every((b) => b === 0xa5), 'the library wrote past our omprpc_turn_info');
  const fromBuf = koffi.decode(buf, T.omprpc_turn_info);

  // The generated prototype (`_Out_ omprpc_turn_info *`) fills an object alike.
  const info = {};
  const err = [null];
  ok(N.turnGetInfo(turn, info, err), err);
  assert.deepEqual(info, fromBuf);

  const whole = parsed(info.turn_json);
  assert.equal(whole.assistantText, 'pong');
  assert.equal(text(info.assistant_text), 'pong');
  assert.equal(info.outcome, TurnOutcome.AGENT_END);
  assert.equal(info.agent_invoked, true);
  assert.equal(text(info.request_id), whole.requestId);
  assert.deepEqual(parsed(info.assistant_message_json), whole.assistantMessage);
  assert.equal(text(info.stop_reason), whole.assistantMessage.stopReason);
  assert.equal(text(info.error_message), null);
  assert.deepEqual(parsed(info.messages_json), whole.messages);
  assert.equal(text(info.prompt_result_json), null);
  assert.equal(text(info.summary_json), null);
  assert.deepEqual([whole.outcome, info.attempts, info.settled], ['agent_end', 1, false]);
  assert.deepEqual([whole.attempts, whole.settled], [info.attempts, info.settled]);
  assert.deepEqual(parsed(info.failed_attempts_json), whole.failedAttempts);
  assert.deepEqual(parsed(info.compactions_json), whole.compactions);
  assert.deepEqual([whole.failedAttempts, whole.compactions], [[], []]);

  const events = views(N.turnEvents, turn, 'omprpc_event_view');
  assert.equal(events.length, Number(info.event_count));
  assert.equal(events.length, whole.events.length);
  assert.ok(events.length > 1);
  assert.deepEqual(events.map((v) => parsed(v.json)), whole.events);
  assert.deepEqual(events.map((v) => text(v.event_type)), whole.events.map((e) => e.type));
  assert.equal(text(events.at(-1).event_type), 'agent_end');

  const messages = views(N.turnMessages, turn, 'omprpc_str');
  assert.deepEqual(messages.map(parsed), whole.messages);

  // The same prompt through the JSON form has the same event types.
  const again = JSON.parse(callOutSync(N.promptAndWait, [client, 'say hello', null, WAIT_MS]));
  assert.equal(again.assistantText, 'pong');
  assert.deepEqual(events.map((v) => text(v.event_type)), again.events.map((e) => e.type));
});

test('an event batch read through the generated declarations', (t) => {
  const client = startClient(t);
  callOutSync(N.prompt, [client, 'say hello', null, WAIT_MS]);
  const events = [];
  while (events.length === 0 || events.at(-1).type !== 'agent_end') {
    const batch = [null];
    const err = [null];
    ok(N.nextEventBatch(client, 1000, WAIT_MS, batch, err), err);
    try {
      for (const v of views(N.eventBatchEvents, batch[0], 'omprpc_event_view')) {
        const ev = parsed(v.json);
        assert.equal(text(v.event_type), ev.type);
        events.push(ev);
      }
    } finally {
      N.eventBatchFree(batch[0]);
    }
  }
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(types.indexOf('agent_start')), [
    'agent_start', 'turn_start', 'message_start', 'message_update', 'message_end', 'turn_end', 'agent_end',
  ]);
});

function callOutSync(fn, args) {
  const out = [null];
  const err = [null];
  ok(fn(...args, out, err), err);
  return take(out[0]);
}
