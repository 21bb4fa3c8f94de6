// `make bench`'s "pi's TS client" rows: pi's own TypeScript RpcClient
// (dist/modes/rpc/rpc-client.js of @earendil-works/pi-coding-agent 1.6.0, or of
// @mariozechner/pi-coding-agent 0.73.1) on the same burst as the bindings, in the same run, so
// "N× pi's TypeScript client" is a same-run ratio.
//
//   OMPRPC_PI_RPC_CLIENT=…/rpc-client.js OMPRPC_FAKE_AGENT=… node bench/pi_ts_client.mjs
//
// RpcClient spawns `node <cliPath> --mode rpc`; cliPath is pi_ts_agent.mjs beside this file,
// which runs $OMPRPC_FAKE_AGENT on the same stdio (no relay in between). One measurement, as
// the bindings' scripts make (bench/README.md): warm up with "burst 100", then time
// `promptAndWait("burst N")` (RpcClient parses every line with JSON.parse and collects the
// events up to its end: agent_end for 0.73.1, agent_settled for 1.x, which needs the fake agent
// to speak 1.x: OMPRPC_FAKE_FLAVOR=pi OMPRPC_FAKE_VERSION=1.6.0) and read the events as the
// bindings' scripts do: each event's type, the last agent_end's messages. Prints
//   events_per_sec=<n> rss_mib=<n> secs=<n> events=<n> settled=<0|1>
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

/**
 * Reads the events as the bindings' bench scripts do, and checks them: N message_updates, the
 * last agent_end with its messages, and N+6 events — N+7 when the turn ends with pi 1.x's
 * agent_settled (right after that agent_end). Returns whether it did.
 */
function consume(events, n) {
  let updates = 0;
  let lastEnd = -1;
  for (let i = 0; i < events.length; i++) {
    const type = events[i].type;
    if (type === 'message_update') updates++;
    else if (type === 'agent_end') lastEnd = i;
  }
  const settled = events[events.length - 1].type === 'agent_settled';
  const end = events[lastEnd];
  if (!end || lastEnd !== events.length - (settled ? 2 : 1) || !Array.isArray(end.messages) || end.messages.length === 0) {
    throw new Error(`the events do not end with agent_end${settled ? ', agent_settled' : ''}`);
  }
  const want = n + (settled ? 7 : 6);
  if (updates !== n || events.length !== want) throw new Error(`${updates} message_update of ${events.length} events, want ${n} of ${want}`);
  return settled;
}

const client = new RpcClient({ cliPath: path.join(here, 'pi_ts_agent.mjs') });
await client.start();
try {
  // The fake agent's handshake frame ({"type":"ready"}, which RpcClient does not know; none
  // when it speaks pi 1.x) comes before this response: after it, every event belongs to the
  // prompts below.
  await client.getState();
  consume(await client.promptAndWait('burst 100'), 100);
  const t0 = process.hrtime.bigint();
  const settled = consume(await client.promptAndWait(`burst ${N}`, undefined, 60000), N);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const rss = process.resourceUsage().maxRSS / 1024;
  const events = N + (settled ? 7 : 6);
  console.log(`events_per_sec=${Math.round(events / secs)} rss_mib=${rss.toFixed(1)} secs=${secs.toFixed(6)} events=${events} settled=${settled ? 1 : 0} node=${process.version} consumed=all-events-JSON.parse(type-of-each,agent_end.messages)`);
} finally {
  await client.stop();
}
process.exit(0);
