// The TypeScript declarations: `tsc --noEmit` over test/types (ESM and CJS usage), when the
// typescript dev dependency is installed (npm ci installs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

test('index.d.cts / index.d.mts type-check a usage file (tsc --noEmit)', (t) => {
  if (!fs.existsSync(tsc)) {
    t.skip('typescript is not installed (npm ci installs the dev dependencies)');
    return;
  }
  const r = spawnSync(process.execPath, [tsc, '-p', 'test/types/tsconfig.json'], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
