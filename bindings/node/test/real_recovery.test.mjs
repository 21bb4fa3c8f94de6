// Issue 21 through the Node binding against the REAL agents, offline, with the fake LLM
// failing a call the way a provider does: pi 1.6.0 (announces settling), pi 0.73.1 (does not:
// retries and overflow compactions follow the failed run's agent_end) and omp 18.2.3 (holds
// the failed run's agent_end back). In every case the call returns after the agent's last run
// with that run's outcome, the agent starts nothing after it returned, and the next prompt is
// accepted at once; an abort in a retry's delay ends the turn at once, aborted, and no retry
// follows. The same sequences against the fake agent: recovery.test.mjs.
//
// One suite per agent (its own client and fake LLM), the three at once; the tests of a suite
// share its client and run in order. pi's retry delay is lowered to 300 ms (settings.json):
// the aborts land in the 1.2 s delay before its third retry.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { GUARD, Workspace, Recorder, piSkip, previousPiSkip, ompSkip, ofType } from './real_agents_support.mjs';
import { sleep } from './helpers.mjs';

/** pi announces settling (`agent_settled`) from 0.80.4. */
function settles(info) {
  if (info.flavor !== 'pi') return false;
  const [a, b, c] = String(info.agentVersion).split('.').map(Number);
  return a > 0 || b > 80 || (b === 80 && c >= 4);
}

/** How a turn the agent finished by itself ends on this agent. */
const endOf = (info) => (settles(info) ? 'agent_settled' : 'agent_end');

/** Says which agent the test ran on. */
function ranOn(t, client) {
  const info = client.info();
  t.diagnostic(`ran on ${info.flavor} ${info.agentVersion}`);
  return info;
}

const stops = (turn) => turn.messages.filter((m) => m.role === 'assistant').map((m) => m.stopReason);

const SAY_HELLO = { match: 'say hello', replies: [{ text: 'pong' }] };

/**
 * Right after `turn` returned: the agent is idle, the next prompt is accepted at once and
 * answered, and no LLM request but that prompt's follows (`quiet`: how long to watch first,
 * e.g. past a retry delay the abort cancelled).
 */
async function nothingAfter(ws, client, quiet = 0) {
  const info = client.info();
  const before = ws.llmRequests().length;
  const state = await client.getState();
  assert.equal(state.isStreaming, false, `${info.flavor} ${info.agentVersion} still streams after the turn returned`);
  if (quiet > 0) await sleep(quiet);
  assert.equal(ws.llmRequests().length, before, 'the agent called the model after the turn returned');
  const next = await client.promptAndWait('say hello', { timeoutMs: GUARD });
  assert.deepEqual([next.assistantText, next.outcome, next.attempts, next.failedAttempts], ['pong', endOf(info), 1, []]);
  await sleep(500);
  assert.equal(ws.llmRequests().length, before + 1, 'only the next prompt reached the model');
  assert.equal((await client.getState()).isStreaming, false);
}

/** A retry after the model failed once with `status`: one turn, two attempts. */
async function assertRetried(t, ws, client, message, status, delayMs) {
  const info = ranOn(t, client);
  const before = ws.llmRequests().length;
  const turn = await client.promptAndWait(message, { timeoutMs: GUARD });
  assert.deepEqual([turn.assistantText, turn.outcome, turn.attempts, turn.settled], ['recovered', endOf(info), 2, settles(info)], JSON.stringify(turn.failedAttempts));
  assert.equal(turn.failedAttempts.length, 1, JSON.stringify(turn.failedAttempts));
  const [f] = turn.failedAttempts;
  assert.deepEqual([f.attempt, f.then], [1, 'retry']);
  assert.ok(f.error.startsWith(status), f.error);
  if (delayMs !== undefined) assert.equal(f.delayMs, delayMs);
  else assert.ok(Number.isInteger(f.delayMs), `${f.delayMs}`);
  assert.deepEqual(turn.compactions, []);
  assert.equal(turn.stopReason, 'stop');
  assert.equal(ofType(turn.events, 'agent_start').length, 2);
  assert.equal(ofType(turn.events, 'auto_retry_start').length, 1);
  assert.equal(turn.events.at(-1).type, settles(info) ? 'agent_settled' : 'agent_end');
  // Both runs' messages, the failed attempt's first (omp sends no agent_end for the failed run:
  // the library keeps what it streamed).
  assert.deepEqual(stops(turn), ['error', 'stop']);
  assert.deepEqual([turn.summary.attempts, turn.summary.failedAttempts], [2, turn.failedAttempts]);
  assert.ok(ws.llmRequests().length >= before + 2, 'the failed call and the retry');
  await nothingAfter(ws, client);
}

/** A context-length error after earlier prompts: pi 0.73.1 and omp compact and answer, pi 1.x gives up. */
async function assertOverflow(t, ws, client) {
  const info = ranOn(t, client);
  const turn = await client.promptAndWait('too long', { timeoutMs: GUARD });
  assert.equal(turn.failedAttempts.length, 1, JSON.stringify(turn.failedAttempts));
  const [f] = turn.failedAttempts;
  assert.match(f.error, /maximum context length/);
  if (settles(info)) {
    assert.deepEqual([turn.outcome, turn.attempts, turn.settled, f.then], ['agent_settled', 1, true, 'none']);
    assert.deepEqual([turn.stopReason, turn.assistantText, turn.compactions], ['error', null, []]);
  } else {
    assert.deepEqual([turn.outcome, turn.attempts, turn.settled, f.then], ['agent_end', 2, false, 'compaction'], JSON.stringify(turn.compactions));
    assert.deepEqual([turn.stopReason, turn.assistantText], ['stop', 'recovered']);
    assert.ok(turn.compactions.length >= 1 && turn.compactions.every((k) => k.reason === 'overflow'), JSON.stringify(turn.compactions));
    const last = turn.compactions.at(-1);
    assert.deepEqual([last.willRetry, last.aborted], [true, false]);
    assert.equal(ofType(turn.events, 'agent_start').length, 2);
  }
  await nothingAfter(ws, client);
}

/** An announced retry whose delay is long enough to abort in (pi's third, 1.2 s; omp's 61 s). */
const longDelay = (e) => e.type === 'auto_retry_start' && e.delayMs >= 1000;

/**
 * How long to watch for the retry an abort cancelled (`announced`, seen at `at`): until past its
 * delay; a delay longer than 5 s (omp's 61 s) is not waited out.
 */
const pastTheDelay = (announced, at) => (announced.delayMs > 5000 ? 500 : Math.max(0, at + announced.delayMs + 500 - Date.now()));

/** The attempts of a turn aborted in its last retry's delay: each retried, the last cancelled. */
function assertCancelledLast(turn) {
  const thens = turn.failedAttempts.map((f) => f.then);
  assert.ok(thens.length >= 1, JSON.stringify(turn.failedAttempts));
  assert.deepEqual(thens, [...Array(thens.length - 1).fill('retry'), 'cancelled'], JSON.stringify(turn.failedAttempts));
  assert.deepEqual(turn.failedAttempts.map((f) => f.attempt), thens.map((_, i) => i + 1));
  assert.equal(turn.attempts, thens.length);
  assert.equal(ofType(turn.events, 'agent_start').length, turn.attempts, 'no run after the cancelled retry');
}

/**
 * `abort()` once the agent announced a retry with a long delay: the turn comes back at once,
 * aborted, that attempt cancelled; the agent does not retry (watched until past the delay).
 */
async function assertAbortInRetryDelay(t, ws, client, rec, message) {
  ranOn(t, client);
  const mark = rec.mark();
  const turnP = client.promptAndWait(message, { timeoutMs: GUARD });
  turnP.catch(() => {}); // awaited below
  const announced = await rec.wait('a retry with a long delay', longDelay, mark);
  const at = Date.now();
  const requests = ws.llmRequests().length;
  await client.abort();
  const turn = await turnP;
  const took = Date.now() - at;
  assert.ok(took < 1000 && took < announced.delayMs, `the aborted turn came back ${took} ms after the retry was announced (its delay: ${announced.delayMs} ms)`);
  assert.equal(turn.outcome, 'aborted', JSON.stringify(turn.failedAttempts));
  assertCancelledLast(turn);
  assert.equal(turn.failedAttempts.at(-1).delayMs, Math.round(announced.delayMs));
  assert.equal(ws.llmRequests().length, requests);
  await nothingAfter(ws, client, pastTheDelay(announced, at));
}

/**
 * The same through promptAndWait's AbortSignal, aborted when the retry is announced: the call
 * rejects at once with the signal's reason, the agent was told to abort (the retry cancelled),
 * and the next prompt, sent right away, is accepted.
 */
async function assertSignalInRetryDelay(t, ws, client, rec, message) {
  ranOn(t, client);
  const mark = rec.mark();
  const ac = new AbortController();
  let at = 0;
  let announced = null;
  const onRetry = (ev) => {
    if (announced !== null || !longDelay(ev)) return;
    [at, announced] = [Date.now(), ev];
    client.off('auto_retry_start', onRetry);
    ac.abort(new Error('the host gave up'));
  };
  client.on('auto_retry_start', onRetry);
  t.after(() => client.off('auto_retry_start', onRetry));
  await assert.rejects(client.promptAndWait(message, { timeoutMs: GUARD, signal: ac.signal }), /the host gave up/);
  assert.ok(announced !== null && Date.now() - at < 1000, 'the call rejected at once');
  const cancelled = await rec.wait('the cancelled retry', (e) => e.type === 'auto_retry_end', mark);
  assert.deepEqual([cancelled.success, cancelled.finalError], [false, 'Retry cancelled']);
  const runs = ofType(rec.since(mark), 'agent_start').length;
  await nothingAfter(ws, client, pastTheDelay(announced, at));
  // No run after the cancelled retry: only the next prompt's.
  assert.equal(ofType(rec.since(mark), 'agent_start').length, runs + 1);
}

// --- pi: retries after a 500 and a 429, overflow; abort in a retry's delay ---------------

// pi's delays with baseDelayMs 300: 300, 600, then 1200 ms before a third retry, in which the
// abort lands. pi 0.73.1's SDK retries a call twice first; a 429 with `retry-after: 0` makes
// that immediate.
const FAIL_THRICE = { kind: 'http_429', times: 3, retry_after_s: 0 };
const PI_SCRIPT = [
  { match: 'flaky 500', replies: [{ text: 'recovered', fail: 'http_500' }] },
  { match: 'flaky 429', replies: [{ text: 'recovered', fail: { kind: 'http_429', retry_after_s: 1 } }] },
  { match: 'too long', replies: [{ text: 'recovered', fail: 'context_length' }] },
  { match: 'abort me', replies: [{ text: 'recovered', fail: FAIL_THRICE }] },
  { match: 'signal me', replies: [{ text: 'recovered', fail: FAIL_THRICE }] },
  SAY_HELLO,
];

/** The pi suite, on the newest pi (`pi: undefined`) or the previous one (`'previous'`). */
function piSuite(label, pi, skip) {
  describe(`${label}: retries, overflow recovery, abort in a retry's delay`, { skip, concurrency: false }, () => {
    let ws;
    let client;
    let rec;
    before(async () => {
      ws = await Workspace.create('pi', PI_SCRIPT, { pi, settings: { retry: { enabled: true, maxRetries: 3, baseDelayMs: 300 } } });
      client = await ws.start([], { turnSummary: true });
      rec = new Recorder(client);
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });

    it('a retry after a 500', async (t) => {
      await assertRetried(t, ws, client, 'flaky 500', '500', 300);
    });

    it('a retry after a 429', async (t) => {
      await assertRetried(t, ws, client, 'flaky 429', '429', 300);
    });

    it('a context-length error: pi 0.73.1 compacts and answers, pi 1.x gives up and settles', async (t) => {
      await assertOverflow(t, ws, client);
    });

    it('abort() in a retry\'s delay ends the turn at once, aborted, and pi does not retry', async (t) => {
      await assertAbortInRetryDelay(t, ws, client, rec, 'abort me');
    });

    it('promptAndWait\'s AbortSignal in a retry\'s delay: rejects at once, pi does not retry, the next prompt is accepted', async (t) => {
      await assertSignalInRetryDelay(t, ws, client, rec, 'signal me');
    });
  });
}

// The three suites at once: each holds a pool thread for its turn and the event reactor one; an
// abort() then waits at most for the reactor's poll slice (250 ms) to get the fourth.
describe('real agents: the end of a prompt (issue 21)', { concurrency: 3 }, () => {
  piSuite('pi (newest)', undefined, piSkip());
  piSuite('pi (previous)', 'previous', previousPiSkip());

  // --- omp: the provider layer retries each call 11 more times by itself (12 identical
  // requests; `retry-after-ms: 1` keeps that fast), then the session retries the turn. ------
  describe('omp: retries, overflow recovery, abort in a retry\'s delay', { skip: ompSkip(), concurrency: false }, () => {
    let ws;
    let client;
    let rec;
    before(async () => {
      ws = await Workspace.create('omp', [
        { match: 'flaky 500', replies: [{ text: 'recovered', fail: { kind: 'http_500', times: 12, retry_after_ms: 1 } }] },
        { match: 'flaky 429', replies: [{ text: 'recovered', fail: { kind: 'http_429', times: 12, retry_after_s: 0, retry_after_ms: 1 } }] },
        { match: 'too long', replies: [{ text: 'recovered', fail: 'context_length' }] },
        // A retry-after above 60 s: the provider layer gives up at once, the session waits 61 s.
        { match: 'abort me', replies: [{ text: 'recovered', fail: { kind: 'http_429', times: 12, retry_after_s: 61 } }] },
        { match: 'signal me', replies: [{ text: 'recovered', fail: { kind: 'http_429', times: 12, retry_after_s: 61 } }] },
        SAY_HELLO,
      ], {
        // Lets the overflow compaction's summary cut this short conversation (omp's config.yml).
        settings: { compaction: { keepRecentTokens: 10 } },
      });
      client = await ws.start([], { turnSummary: true });
      rec = new Recorder(client);
    });
    after(async () => {
      await client?.close();
      await ws?.close();
    });

    it('a retry after a 500', async (t) => {
      await assertRetried(t, ws, client, 'flaky 500', '500');
      assert.equal(ofType(rec.items, 'agent_end').length, 2, 'omp held the failed run\'s agent_end back (one per prompt)');
    });

    it('a retry after a 429', async (t) => {
      await assertRetried(t, ws, client, 'flaky 429', '429');
    });

    it('a context-length error after earlier prompts: omp compacts and answers', async (t) => {
      await assertOverflow(t, ws, client);
    });

    it('abort() in the retry\'s delay ends the turn at once, aborted', async (t) => {
      await assertAbortInRetryDelay(t, ws, client, rec, 'abort me');
    });

    it('promptAndWait\'s AbortSignal in the retry\'s delay: rejects at once, the next prompt is accepted', async (t) => {
      await assertSignalInRetryDelay(t, ws, client, rec, 'signal me');
    });
  });
});
