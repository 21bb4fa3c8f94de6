// The "agent" pi's RpcClient runs for bench/pi_ts_client.mjs (`node pi_ts_agent.mjs --mode rpc`):
// the fake agent ($OMPRPC_FAKE_AGENT) on this process's own stdin/stdout, so the client reads
// the fake agent's pipe directly. Exits with its status, or on SIGTERM (RpcClient.stop).
import { spawn } from 'node:child_process';

const child = spawn(process.env.OMPRPC_FAKE_AGENT, process.argv.slice(2), { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
process.on('SIGTERM', () => {
  child.kill('SIGTERM');
  process.exit(0);
});
