// The TypeScript declarations: `tsc --strict --noEmit` over test/types and the README examples, when the
// typescript dev dependency is installed (npm ci installs it).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

// No `any` in the public declarations (issue 23 §3): a payload the table does not type is
// `unknown`, which a caller must narrow. Comments are left out of the count.
test('no public .d.ts declares any', () => {
  for (const file of ['index.d.cts', 'index.d.mts', 'protocol.gen.d.ts']) {
    const text = fs.readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
    const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').replace(/'[^'\n]*'/g, "''");
    const lines = code.split('\n').filter((l) => /\bany\b/.test(l));
    assert.deepEqual(lines, [], `${file} declares any`);
  }
});

// The declarations against the typed-usage files (test/types: ESM and CJS usage, the generated
// protocol, the payloads) and the README's TypeScript and JavaScript examples that import
// omprpc, as strict TypeScript modules: one tsc run (tsc --strict --noEmit).
test('the usage files and README examples type-check (tsc --strict --noEmit)', (t) => {
  if (!fs.existsSync(tsc)) {
    t.skip('typescript is not installed (npm ci installs the dev dependencies)');
    return;
  }
  const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const blocks = [...readme.matchAll(/```(?:js|ts)\n([\s\S]*?)```/g)].map((m) => m[1]).filter((code) => /from 'omprpc'/.test(code));
  assert.ok(blocks.length >= 2, 'the README examples that import omprpc');
  const dir = fs.mkdtempSync(fileURLToPath(new URL('./types/readme-', import.meta.url)));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const examples = blocks.map((code, i) => {
    const file = `${dir}/example-${i + 1}.mts`;
    fs.writeFileSync(file, `${code}\nexport {};\n`);
    return file;
  });
  const base = JSON.parse(fs.readFileSync(new URL('./types/tsconfig.json', import.meta.url), 'utf8'));
  const usage = base.files.map((f) => fileURLToPath(new URL(`./types/${f}`, import.meta.url)));
  fs.writeFileSync(`${dir}/tsconfig.json`, JSON.stringify({ compilerOptions: base.compilerOptions, files: [...usage, ...examples] }));
  const r = spawnSync(process.execPath, [tsc, '-p', `${dir}/tsconfig.json`], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
