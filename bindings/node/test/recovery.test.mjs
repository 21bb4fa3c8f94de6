// Issue 21 through the Node binding, against the fake agent as pi 0.73.1 (no agent_settled),
// pi 1.6.0 (agent_settled, dispositions) and omp 18.2.3: a prompt ends where the agent says it
// will not go on — a retry after a 500 or a 429, an overflow compaction, retries that run out,
// a failure nobody retries, an abort in a retry's delay — and the turn says what happened
// (outcome, attempts, settled, failedAttempts, compactions). The core decides all of it; these
// tests hold the binding to exposing it. The real agents: real_recovery.test.mjs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '../index.mjs';
import { FAKE, WAIT_MS, count, sleep } from './helpers.mjs';

const AGENTS = [
  { flavor: 'pi', version: '0.73.1', settles: false },
  { flavor: 'pi', version: '1.6.0', settles: true },
  { flavor: 'omp', version: '18.2.3', settles: false },
];

/** The fake agent as `flavor` `version` (the library probes `--version`); closed after the test. */
async function startAs(t, { flavor, version }, extra = {}) {
  const c = await Client.start({
    command: [FAKE, '--flavor', flavor, '--mode', 'rpc'],
    flavor,
    env: { OMPRPC_FAKE_VERSION: version },
    stopGraceMs: 500,
    ...extra,
  });
  t.after(() => c.close());
  assert.equal(c.info().agentVersion, version);
  return c;
}

/** Every event a client's listeners see. */
function record(c) {
  const seen = [];
  c.on('event', (ev) => seen.push(ev));
  return seen;
}

/** How a turn of `agent` that the agent finished by itself ends. */
const ended = (agent) => (agent.settles ? 'agent_settled' : 'agent_end');

/** The stop reasons of the turn's assistant messages, in order (pi 1.x lists a system message too). */
const stops = (turn) => turn.messages.filter((m) => m.role === 'assistant').map((m) => m.stopReason);

/** After the turn returned the agent is idle, starts nothing, and takes the next prompt. */
async function nothingAfter(c, seen, agent) {
  const mark = seen.length;
  assert.equal((await c.getState()).isStreaming, false);
  await sleep(150);
  assert.deepEqual(seen.slice(mark).map((e) => e.type).filter((t) => t === 'agent_start'), [], 'the agent started a run after the turn returned');
  const next = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
  assert.deepEqual([next.assistantText, next.outcome, next.attempts, next.failedAttempts], ['pong', ended(agent), 1, []]);
}

for (const agent of AGENTS) {
  const name = `fake ${agent.flavor} ${agent.version}`;
  // Two at a time: a test holds a pool thread for its turn, the event reactor holds one, and an
  // abort() in a retry's delay needs one more (libuv's pool has 4).
  describe(name, { concurrency: 2 }, () => {
    for (const [message, status] of [['retry once', '500'], ['rate limited', '429']]) {
      it(`${message}: one turn of two attempts, ended after the retry's run`, async (t) => {
        const c = await startAs(t, agent, { turnSummary: true });
        const seen = record(c);
        const unused = new AbortController(); // a signal that never fires changes nothing
        const turn = await c.promptAndWait(message, { timeoutMs: WAIT_MS, signal: unused.signal });
        assert.deepEqual([turn.outcome, turn.attempts, turn.settled], [ended(agent), 2, agent.settles]);
        assert.equal(turn.assistantText, 'recovered');
        assert.equal(turn.stopReason, 'stop');
        // Every run's messages, the failed attempt's first (omp holds back the failed run's
        // agent_end: the library keeps what that run streamed).
        assert.deepEqual(stops(turn), ['error', 'stop']);
        assert.equal(turn.failedAttempts.length, 1, JSON.stringify(turn.failedAttempts));
        const [f] = turn.failedAttempts;
        assert.deepEqual([f.attempt, f.then, f.delayMs], [1, 'retry', 100]);
        assert.ok(f.error.startsWith(status), f.error);
        assert.deepEqual(turn.compactions, []);
        assert.equal(count(turn.events, 'agent_start'), 2);
        assert.equal(count(turn.events, 'auto_retry_start'), 1);
        assert.equal(turn.events.at(-1).type, agent.settles ? 'agent_settled' : 'agent_end');
        assert.deepEqual([turn.summary.attempts, turn.summary.failedAttempts], [2, turn.failedAttempts]);
        // Listeners had the whole turn when the call returned.
        assert.equal(seen.filter((e) => e.type === 'auto_retry_end').length, 1);
        await nothingAfter(c, seen, agent);
      });
    }

    it('overflow: pi 0.73.1 and omp compact and answer; pi 1.6.0 gives up and settles', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const turn = await c.promptAndWait('overflow', { timeoutMs: WAIT_MS });
      const [f] = turn.failedAttempts;
      assert.equal(turn.failedAttempts.length, 1, JSON.stringify(turn.failedAttempts));
      assert.match(f.error, /maximum context length/);
      if (agent.settles) {
        assert.deepEqual([turn.outcome, turn.attempts, turn.settled, f.then], ['agent_settled', 1, true, 'none']);
        assert.deepEqual([turn.stopReason, turn.assistantText, turn.compactions], ['error', null, []]);
        assert.match(turn.errorMessage, /maximum context length/);
      } else {
        assert.deepEqual([turn.outcome, turn.attempts, turn.settled, f.then], ['agent_end', 2, false, 'compaction']);
        assert.deepEqual([turn.stopReason, turn.assistantText], ['stop', 'recovered']);
        assert.ok(turn.compactions.length >= 1 && turn.compactions.every((k) => k.reason === 'overflow'), JSON.stringify(turn.compactions));
        assert.deepEqual([turn.compactions.at(-1).willRetry, turn.compactions.at(-1).aborted], [true, false]);
        assert.equal(count(turn.events, 'agent_start'), 2);
      }
      await nothingAfter(c, seen, agent);
    });

    it('retries exhausted: every attempt listed, the last one gave up', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const turn = await c.promptAndWait('retries exhausted', { timeoutMs: WAIT_MS });
      assert.deepEqual([turn.outcome, turn.attempts, turn.stopReason], [ended(agent), 3, 'error']);
      assert.deepEqual(turn.failedAttempts.map((f) => [f.attempt, f.then, f.delayMs]), [[1, 'retry', 100], [2, 'retry', 200], [3, 'gave_up', undefined]]);
      await nothingAfter(c, seen, agent);
    });

    it('a failed call nobody retries ends the turn with it', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const turn = await c.promptAndWait('failed call', { timeoutMs: WAIT_MS });
      assert.deepEqual([turn.outcome, turn.attempts, turn.settled, turn.stopReason], [ended(agent), 1, agent.settles, 'error']);
      assert.equal(turn.failedAttempts.length, 1);
      assert.deepEqual([turn.failedAttempts[0].then, 'delayMs' in turn.failedAttempts[0]], ['none', false]);
      assert.match(turn.errorMessage, /bad parameter/);
      await nothingAfter(c, seen, agent);
    });

    it('waitForIdle ends where the turn does: after the retry\'s run', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      await c.prompt('retry once', { timeoutMs: WAIT_MS });
      await c.waitForIdle({ timeoutMs: WAIT_MS });
      const types = seen.map((e) => e.type);
      assert.equal(types.filter((x) => x === 'agent_start').length, 2, `${types}`);
      assert.equal(types.at(-1), agent.settles ? 'agent_settled' : 'agent_end', `${types}`);
      assert.equal(seen.filter((e) => e.type === 'agent_end').at(-1).messages.at(-1).stopReason, 'stop');
      await nothingAfter(c, seen, agent);
    });

    it('prompt_complete comes with the retry\'s run, with the turn\'s outcome', async (t) => {
      const c = await startAs(t, agent, { promptCompleteEvents: true });
      const seen = record(c);
      const it = c.events({ types: ['prompt_complete'] });
      const id = await c.prompt('retry once', { timeoutMs: WAIT_MS });
      const deadline = setTimeout(() => it.return(), WAIT_MS);
      const { value: done } = await it.next();
      clearTimeout(deadline);
      await it.return();
      assert.deepEqual([done.requestId, done.outcome, done.agentInvoked, done.omprpc], [id, ended(agent), true, true]);
      const types = seen.map((e) => e.type);
      assert.equal(types.filter((x) => x === 'agent_start').length, 2, `${types}`);
      assert.equal(types.indexOf('prompt_complete'), types.length - 1, `nothing of the prompt after it: ${types}`);
      await nothingAfter(c, seen, agent);
    });

    it('abort() in a retry\'s delay ends the turn at once, aborted; no retry follows', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const it = c.events({ types: ['auto_retry_start'] });
      const turnP = c.promptAndWait('retry until abort', { timeoutMs: WAIT_MS });
      const announced = await it.next();
      await it.return();
      assert.equal(announced.value.delayMs >= 60_000, true, 'the scenario waits 60 s to retry');
      const t0 = Date.now();
      await c.abort();
      const turn = await turnP;
      const took = Date.now() - t0;
      assert.ok(took < 1000, `the aborted turn came back ${took} ms after the abort`);
      assert.deepEqual([turn.outcome, turn.attempts, turn.settled], ['aborted', 1, agent.settles]);
      assert.deepEqual(turn.failedAttempts.map((f) => [f.attempt, f.then]), [[1, 'cancelled']]);
      assert.equal(count(turn.events, 'agent_start'), 1);
      await nothingAfter(c, seen, agent);
    });

    it('abortRetry() in a retry\'s delay ends the turn at once, aborted', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const it = c.events({ types: ['auto_retry_start'] });
      const turnP = c.promptAndWait('retry until abort', { timeoutMs: WAIT_MS });
      await it.next();
      await it.return();
      await c.abortRetry();
      const turn = await turnP;
      // The host cancelled the retry: aborted, though pi 1.x then settles `{aborted:false}`.
      assert.deepEqual([turn.outcome, turn.attempts, turn.settled], ['aborted', 1, agent.settles]);
      assert.deepEqual(turn.failedAttempts.map((f) => [f.attempt, f.then]), [[1, 'cancelled']]);
      await nothingAfter(c, seen, agent);
    });

    it('an AbortSignal in a retry\'s delay: abort sent, the call rejects at once, the next prompt follows the aborted one', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      const ac = new AbortController();
      c.once('auto_retry_start', () => ac.abort(new Error('enough')));
      const t0 = Date.now();
      await assert.rejects(c.promptAndWait('retry until abort', { timeoutMs: WAIT_MS, signal: ac.signal }), /enough/);
      assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
      // Sent at once: no ConcurrencyError from the library, no busy agent.
      const next = await c.promptAndWait('say hello', { timeoutMs: WAIT_MS });
      assert.deepEqual([next.assistantText, next.outcome, next.attempts], ['pong', ended(agent), 1]);
      const types = seen.map((e) => e.type);
      const cancelled = seen.findIndex((e) => e.type === 'auto_retry_end' && e.finalError === 'Retry cancelled');
      assert.ok(cancelled > 0, `the agent was told to abort: ${types}`);
      assert.deepEqual(types.filter((x) => x === 'agent_start').length, 2, `the failed run and the next prompt's: ${types}`);
      assert.ok(types.lastIndexOf('agent_start') > cancelled, `${types}`);
      await nothingAfter(c, seen, agent);
    });

    it('an AbortSignal aborted before the call: nothing is sent', async (t) => {
      const c = await startAs(t, agent);
      const seen = record(c);
      await assert.rejects(c.promptAndWait('retry once', { signal: AbortSignal.abort(new Error('not now')) }), /not now/);
      await sleep(100);
      assert.deepEqual(seen.filter((e) => e.type === 'agent_start'), []);
      await nothingAfter(c, seen, agent);
    });
  });
}
