// Throughput of the Node binding over the fake agent's "burst N" prompt (N message_update
// events of 640 bytes each):
//   1. promptAndWait: the whole turn (N+6 events) assembled by the core; once as returned
//      (turn.events is parsed on first read), once with turn.events read;
//   2. the async iterator: prompt(), then `for await (const ev of client.events())`;
//   3. an 'event' listener on the EventEmitter;
//   and, for scale, V8's JSON.parse of the same events from one string (no FFI at all).
// Usage: node bench.mjs [N=100000] [runs=5]
// Env: OMPRPC_LIBRARY (default: the newest of target/release, target/debug),
//      OMPRPC_FAKE_AGENT (default: target/release/omprpc-fake-agent, else target/debug).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, libraryPath, load } from './index.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.argv[2] || 100000);
const RUNS = Number(process.argv[3] || 5);

function fakeAgent() {
  if (process.env.OMPRPC_FAKE_AGENT) return path.resolve(process.env.OMPRPC_FAKE_AGENT);
  for (const profile of ['release', 'debug']) {
    const p = path.resolve(here, '..', '..', 'target', profile, 'omprpc-fake-agent');
    if (fs.existsSync(p)) return p;
  }
  throw new Error('no fake agent: set OMPRPC_FAKE_AGENT or run cargo build');
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

load();
const agent = fakeAgent();
console.log(`omprpc Node bench: burst ${N}, ${RUNS} runs (+1 warm-up), node ${process.version}`);
console.log(`library ${libraryPath()}\nagent   ${agent}`);
// The promptAndWait client keeps (almost) nothing in its event queue: the turn is the point.
const pw = await Client.start({ command: [agent], maxEventHistory: null, eventQueueCapacity: 16 });
const client = await Client.start({ command: [agent], maxEventHistory: null });

const results = {};
results.promptAndWait = await measure('promptAndWait (turn)', async () => {
  const turn = await pw.promptAndWait(`burst ${N}`);
  if (turn.assistantText !== 'pong') throw new Error('unexpected turn');
  return N + 6;
});

results.promptAndWaitEvents = await measure('promptAndWait + turn.events', async () => {
  const turn = await pw.promptAndWait(`burst ${N}`);
  if (turn.events.length !== N + 6) throw new Error(`turn has ${turn.events.length} events`);
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
