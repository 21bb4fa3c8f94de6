// Throughput of the Node binding over the fake agent's "burst N" prompt (N message_update
// events of 640 bytes each, plus 6 others).
//
// Without arguments (how `make bench` runs it, bench/README.md): ONE measurement, one line
//   events_per_sec=<n> rss_mib=<n> …
// A client with maxEventHistory null is warmed up with "burst 100"; the timed part is
// promptAndWait("burst $OMPRPC_BENCH_EVENTS") (default 100000) and reading turn.events as a
// host does: each event's type (read without parsing the event), the final agent_end's
// messages (which parses that event; every event is parsed on its first use, README). events/s
// = events of the turn / the timed seconds; rss_mib = the process's peak RSS
// (resourceUsage().maxRSS). The turn has N+6 events, N+7 when the agent speaks pi 1.x (make
// bench runs the fake agent so, with OMPRPC_FAKE_FLAVOR=pi OMPRPC_FAKE_VERSION=1.6.0): its turn
// ends with agent_settled, right after the last agent_end.
//
// `node bench.mjs --report [N=100000] [runs=5]`: the richer report —
//   1. promptAndWait: the whole turn (N+6 events) assembled by the core; as returned, with
//      each event's type read (as the single measurement), and with every event parsed;
//   2. the async iterator: prompt(), then `for await (const ev of client.events())`;
//   3. an 'event' listener on the EventEmitter;
//   and, for scale, V8's JSON.parse of the same events from one string (no FFI at all).
// Env: OMPRPC_LIBRARY (default: the newest of target/release, target/debug),
//      OMPRPC_FAKE_AGENT (default: target/release/omprpc-fake-agent, else target/debug),
//      OMPRPC_BENCH_EVENTS (N of the single measurement).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, libraryPath, load } from './index.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const REPORT = process.argv[2] === '--report';
const N = Number((REPORT ? process.argv[3] : process.env.OMPRPC_BENCH_EVENTS) || 100000);
const RUNS = Number((REPORT && process.argv[4]) || 5);

function fakeAgent() {
  if (process.env.OMPRPC_FAKE_AGENT) return path.resolve(process.env.OMPRPC_FAKE_AGENT);
  for (const profile of ['release', 'debug']) {
    const p = path.resolve(here, '..', '..', 'target', profile, 'omprpc-fake-agent');
    if (fs.existsSync(p)) return p;
  }
  throw new Error('no fake agent: set OMPRPC_FAKE_AGENT or run cargo build');
}

/**
 * The fake agent's command, and the options that say what it speaks: as it is (omp), or
 * OMPRPC_FAKE_FLAVOR / OMPRPC_FAKE_VERSION (e.g. pi 1.6.0), which the library does not pass on
 * to the agent by itself (its environment allow-list): a pi host says `flavor: 'pi'`.
 */
function agentOptions(agent) {
  const options = { command: [agent] };
  const flavor = process.env.OMPRPC_FAKE_FLAVOR;
  if (flavor) {
    options.command.push('--flavor', flavor);
    options.flavor = flavor;
  }
  if (process.env.OMPRPC_FAKE_VERSION) options.env = { OMPRPC_FAKE_VERSION: process.env.OMPRPC_FAKE_VERSION };
  return options;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x) => Math.round(x).toLocaleString('en-US');

async function measure(name, run) {
  await run(); // warm-up
  const rates = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    const events = await run();
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    rates.push(events / s);
  }
  console.log(`${name.padEnd(28)} median ${fmt(median(rates))} events/s   best ${fmt(Math.max(...rates))}   worst ${fmt(Math.min(...rates))}`);
  return median(rates);
}

/**
 * Reads a turn as a host does: every event's type, and the last agent_end's messages (followed
 * by agent_settled when the turn's outcome says so). Returns the number of events.
 */
function consume(turn, n) {
  const events = turn.events;
  let updates = 0;
  for (const ev of events) if (ev.type === 'message_update') updates++;
  const settled = turn.outcome === 'agent_settled';
  const last = events[events.length - 1];
  if (settled !== (last.type === 'agent_settled')) throw new Error(`the turn's outcome is ${turn.outcome} and its last event ${last.type}`);
  const end = settled ? events[events.length - 2] : last;
  if (end.type !== 'agent_end' || !Array.isArray(end.messages) || end.messages.length === 0) throw new Error('the turn does not end with agent_end');
  const want = n + (settled ? 7 : 6);
  if (updates !== n || events.length !== want) throw new Error(`${updates} message_update of ${events.length} events, want ${n} of ${want}`);
  if (turn.assistantText !== 'pong') throw new Error('unexpected turn');
  return events.length;
}

async function oneMeasurement() {
  load();
  const client = await Client.start({ ...agentOptions(fakeAgent()), maxEventHistory: null });
  try {
    consume(await client.promptAndWait('burst 100'), 100); // warm-up
    const t0 = process.hrtime.bigint();
    const events = consume(await client.promptAndWait(`burst ${N}`), N);
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    const rss = process.resourceUsage().maxRSS / 1024;
    console.log(`events_per_sec=${Math.round(events / secs)} rss_mib=${rss.toFixed(1)} secs=${secs.toFixed(6)} events=${events} decode=lazy consumed=turn.events(each-event-parsed-on-first-use,type-of-each,agent_end.messages)`);
  } finally {
    await client.close();
  }
}

if (!REPORT) {
  await oneMeasurement();
  process.exit(0);
}

load();
const agent = fakeAgent();
console.log(`omprpc Node bench: burst ${N}, ${RUNS} runs (+1 warm-up), node ${process.version}`);
console.log(`library ${libraryPath()}\nagent   ${agent}`);
// The promptAndWait client keeps (almost) nothing in its event queue: the turn is the point.
const pw = await Client.start({ ...agentOptions(agent), maxEventHistory: null, eventQueueCapacity: 16 });
const client = await Client.start({ ...agentOptions(agent), maxEventHistory: null });

const results = {};
results.promptAndWait = await measure('promptAndWait (turn)', async () => {
  const turn = await pw.promptAndWait(`burst ${N}`);
  if (turn.assistantText !== 'pong') throw new Error('unexpected turn');
  return turn.outcome === 'agent_settled' ? N + 7 : N + 6;
});

results.promptAndWaitEvents = await measure('promptAndWait + each type', async () => {
  const turn = await pw.promptAndWait(`burst ${N}`);
  consume(turn, N);
  return turn.events.length;
});

results.promptAndWaitParsed = await measure('promptAndWait + every event', async () => {
  const turn = await pw.promptAndWait(`burst ${N}`);
  let fields = 0;
  for (const ev of turn.events) fields += Object.keys(ev).length; // parses each event
  if (fields < 2 * (N + 6)) throw new Error('unexpected events');
  return turn.events.length;
});
// The floor for anything that hands out JS objects: V8's JSON.parse of the same events.
const eventsJson = JSON.stringify((await pw.promptAndWait(`burst ${N}`)).events);
results.parseBaseline = await measure('(JSON.parse baseline)', async () => JSON.parse(eventsJson).length);
await pw.close();

results.iterator = await measure('async iterator', async () => {
  const it = client.events();
  await client.prompt(`burst ${N}`);
  let n = 0;
  for await (const ev of it) {
    n++;
    if (ev.type === 'agent_end') break;
  }
  return n;
});

results.listener = await measure("'event' listener", async () => {
  let n = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const on = (ev) => {
    n++;
    if (ev.type === 'agent_end') done();
  };
  client.on('event', on);
  await client.prompt(`burst ${N}`);
  await finished;
  client.off('event', on);
  return n;
});

await client.close();
console.log(JSON.stringify({ n: N, runs: RUNS, eventsPerSecond: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, Math.round(v)])) }));
