// README.md's example, extracted and run against the fake agent.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FAKE } from './helpers.mjs';

test('the README example runs', (t) => {
  const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const marker = readme.indexOf('<!-- README example');
  assert.ok(marker >= 0, 'README example marker missing');
  const m = /```js\n([\s\S]*?)```/.exec(readme.slice(marker));
  assert.ok(m, 'README example code block missing');
  // inside the package, so `import 'omprpc'` resolves to this package (self-reference)
  const file = fileURLToPath(new URL(`./fixtures/readme-example-${process.pid}.mjs`, import.meta.url));
  fs.writeFileSync(file, m[1]);
  t.after(() => fs.rmSync(file, { force: true }));
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, OMPRPC_AGENT: FAKE }, timeout: 30_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^pong\nassistant: pong\nno_such_command failed: unsupported: no_such_command\n$/);
});
