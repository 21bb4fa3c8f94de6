// `make bench`'s "pi's TS client" row: pi's own TypeScript RpcClient
// (@mariozechner/pi-coding-agent, dist/modes/rpc/rpc-client.js) on the same burst as the
// bindings, in the same run, so "as fast as pi's TypeScript client" is a same-run ratio.
//
//   OMPRPC_PI_RPC_CLIENT=…/rpc-client.js OMPRPC_FAKE_AGENT=… node bench/pi_ts_client.mjs
//
// RpcClient spawns `node <cliPath> --mode rpc`; cliPath is pi_ts_agent.mjs beside this file,
// which runs $OMPRPC_FAKE_AGENT on the same stdio (no relay in between). One measurement, as
// the bindings' scripts make (bench/README.md): warm up with "burst 100", then time
// `promptAndWait("burst N")` (RpcClient parses every line with JSON.parse and collects the
// events up to agent_end) and read the events as the bindings' scripts do: each event's
// type, the final agent_end's messages. Prints
//   events_per_sec=<n> rss_mib=<n> secs=<n> events=<n>
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.OMPRPC_BENCH_EVENTS || 100000);
const clientPath = process.env.OMPRPC_PI_RPC_CLIENT;
if (!clientPath || !process.env.OMPRPC_FAKE_AGENT) {
  console.error('pi_ts_client: set OMPRPC_PI_RPC_CLIENT (pi\'s dist/modes/rpc/rpc-client.js) and OMPRPC_FAKE_AGENT');
  process.exit(2);
}
const { RpcClient } = await import(pathToFileURL(path.resolve(clientPath)).href);

/** Reads the events as the bindings' bench scripts do, and checks them. */
function consume(events, n) {
  let updates = 0;
  for (const ev of events) if (ev.type === 'message_update') updates++;
  const end = events[events.length - 1];
  if (end.type !== 'agent_end' || !Array.isArray(end.messages) || end.messages.length === 0) throw new Error('the events do not end with agent_end');
  if (updates !== n || events.length !== n + 6) throw new Error(`${updates} message_update of ${events.length} events, want ${n} of ${n + 6}`);
}

const client = new RpcClient({ cliPath: path.join(here, 'pi_ts_agent.mjs') });
await client.start();
try {
  // The fake agent's handshake frame ({"type":"ready"}, which RpcClient does not know) comes
  // before this response: after it, every event belongs to the prompts below.
  await client.getState();
  consume(await client.promptAndWait('burst 100'), 100);
  const t0 = process.hrtime.bigint();
  consume(await client.promptAndWait(`burst ${N}`, undefined, 60000), N);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const rss = process.resourceUsage().maxRSS / 1024;
  console.log(`events_per_sec=${Math.round((N + 6) / secs)} rss_mib=${rss.toFixed(1)} secs=${secs.toFixed(6)} events=${N + 6} consumed=all-events-JSON.parse(type-of-each,agent_end.messages)`);
} finally {
  await client.stop();
}
process.exit(0);
