// README.md's examples, extracted and run against the fake agent: the stream example (a turn
// with tool calls; Ctrl-C mid-turn) and the host-tool example.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FAKE, WAIT_MS } from './helpers.mjs';

/** The code block after `marker` in README.md, written into the package (so `import 'omprpc'`
 * resolves to this package by self-reference); removed when the test ends. */
function extract(t, marker, name) {
  const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, `README marker missing: ${marker}`);
  const m = /```js\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(m, 'README example code block missing');
  const file = fileURLToPath(new URL(`./fixtures/readme-${name}-${process.pid}.mjs`, import.meta.url));
  fs.writeFileSync(file, m[1]);
  t.after(() => fs.rmSync(file, { force: true }));
  return file;
}

const env = { ...process.env, OMPRPC_AGENT: FAKE };

test('the README opens with the stream example', () => {
  const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const lines = readme.split('\n');
  assert.match(lines[0], /^# omprpc for Node\.js$/);
  assert.ok(readme.indexOf('<!-- README stream example') < readme.indexOf('## '), 'before any section');
  assert.match(readme, /for await \(const item of client\.stream\(/);
});

test('the README stream example streams a turn with tool calls', (t) => {
  const file = extract(t, '<!-- README stream example', 'stream');
  // "all events": the fake agent's turn with a tool call, a retry and a compaction.
  const r = spawnSync(process.execPath, [file, 'all events'], { encoding: 'utf8', env, timeout: 30_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(r.stdout, 'pong\n[read] {"path":"README.md"}\n[read] success\n\n(stop; 1 tokens in, 1 out)\n');
});

test('the README stream example: Ctrl-C aborts the turn and the program ends cleanly', async (t) => {
  const file = extract(t, '<!-- README stream example', 'stream-sigint');
  const child = spawn(process.execPath, [file, 'stream until abort'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const killer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise((resolve) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.length > 0) resolve(); // text is streaming: the turn runs
    });
  });
  child.kill('SIGINT');
  const code = await exited;
  clearTimeout(killer);
  assert.equal(code, 0, out + err);
  assert.match(out, /\n\(cancelled\)\n$/);
});

test('the README host-tool example runs', (t) => {
  const file = extract(t, '<!-- README example', 'example');
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', env, timeout: 30_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^assistant: pong\nno_such_command failed: unsupported: no_such_command\n$/);
});
