// pi through the tool bridge, end to end: the core generates a pi extension; the
// repository's harness (tests/fixtures/bridge-harness.cjs, a stand-in for pi's extension API)
// runs it against the live bridge while this binding's handlers answer: host tools with
// updates, errors and cancellation (bridged calls), and the tool-policy gate in host mode.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { start } from './helpers.mjs';

const HARNESS = fileURLToPath(new URL('../../../tests/fixtures/bridge-harness.cjs', import.meta.url));
const ECHO = { name: 'echo_host', description: 'Echo', parameters: { type: 'object', properties: { message: { type: 'string' } } } };

function harness(client, scenario) {
  const argv = client.info().argv;
  const ext = argv[argv.indexOf('--extension') + 1];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [HARNESS, ext, scenario], { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`harness ${scenario}: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

const piOptions = (extra) => [['--flavor', 'pi'], { flavor: 'pi', stopGraceMs: 300, ...extra }];

test('bridged host tools: handler, updates, errors, cancellation', { skip: !fs.existsSync(HARNESS) && 'no bridge harness' }, async (t) => {
  const seen = [];
  let cancelled = null;
  const c = await start(t, ...piOptions({
    hostTools: [{
      ...ECHO,
      handler: async (args, ctx) => {
        seen.push(ctx.event);
        if (args.message === 'fail') throw new Error('it broke');
        if (args.message === 'slow') {
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
          cancelled = ctx.signal.reason;
          return 'too late';
        }
        ctx.update('wörking');
        return { content: [{ type: 'text', text: `host: ✓ ${args.message}` }], details: { k: 1 } };
      },
    }],
  }));
  let out = await harness(c, 'tool');
  assert.deepEqual(out.tools, ['echo_host']);
  assert.equal(out.updates[0].content[0].text, 'wörking');
  assert.equal(out.result.content[0].text, 'host: ✓ hello');
  assert.equal(out.result.details.k, 1);
  assert.equal(seen[0].bridged, true);
  out = await harness(c, 'tool-error');
  assert.equal(out.error, 'it broke');
  out = await harness(c, 'abort');
  assert.equal(out.error, 'cancelled');
  const deadline = Date.now() + 5000;
  while (cancelled === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(cancelled && cancelled.code, 'CANCELLED');
});

// An agent in another network namespace or on another host dials the bridge at an address of
// its own: bound on every interface, advertised as 127.0.0.2 (which the bind covers); the
// generated extension, run by the harness, dials the advertised address.
test('the bridge listens on one address and the extension dials another', { skip: !fs.existsSync(HARNESS) && 'no bridge harness' }, async (t) => {
  const c = await start(t, ...piOptions({
    hostTools: [{ ...ECHO, handler: async (args) => `far: ${args.message}` }],
    bridgeListen: '0.0.0.0:0',
    bridgeAdvertise: '127.0.0.2:0',
  }));
  const endpoint = c.info().bridgeEndpoint;
  const port = endpoint.listen.split(':').pop();
  assert.deepEqual(endpoint, { transport: 'tcp', listen: `0.0.0.0:${port}`, advertise: `127.0.0.2:${port}` });
  const out = await harness(c, 'tool');
  assert.equal(out.result.content[0].text, 'far: hello');
  await assert.rejects(start(t, ...piOptions({ hostTools: [ECHO], bridgeListen: '0.0.0.0:0' })), /bridge_advertise/);
});

test('the tool-policy gate in host mode, answered by a handler', { skip: !fs.existsSync(HARNESS) && 'no bridge harness' }, async (t) => {
  const asked = [];
  const c = await start(t, ...piOptions({
    hostTools: [ECHO],
    toolPolicy: {
      mode: 'host',
      timeout_ms: 2000,
      handler: async (ev, ctx) => {
        asked.push([ev.toolName, ctx.requestId === ev.id, ev.parentToolCallId ?? null]);
        return ev.toolName === 'bash' ? { allow: false, reason: 'not in tests' } : true;
      },
    },
  }));
  const out = await harness(c, 'gate');
  assert.equal(out.gate, true);
  assert.deepEqual(out.bash, { block: true, reason: 'not in tests' });
  assert.equal(out.read ?? null, null, 'allowed: no block');
  assert.equal(out.bridged ?? null, null, 'bridged tools are not gated');
  // the harness's read is a call another tool made (a codemode script's, as pi 1.6.0 sends it)
  assert.deepEqual(asked, [['bash', true, null], ['read', true, 'tc-2']]);
  // answered by hand instead, from the policy_eval events (first drop what the pump kept
  // while only the handler listened: a new iterator would get those first)
  c.setPolicyHandler(null);
  while (await c.nextEvent({ timeoutMs: 0 }).then(() => true, () => false));
  const it = c.events({ types: ['policy_eval'] });
  const pending = harness(c, 'gate');
  for (let i = 0; i < 2; i++) {
    const { value: q } = await it.next();
    c.policyVerdict(q.id, q.toolName !== 'bash', q.toolName === 'bash' ? 'by hand' : null);
  }
  const manual = await pending;
  assert.deepEqual(manual.bash, { block: true, reason: 'by hand' });
  assert.equal(manual.read ?? null, null);
  await it.return();
});
