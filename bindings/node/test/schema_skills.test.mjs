// The embedder helpers through the binding: the tool-parameter schema sanitizer
// (sanitizeSchema, the sanitizeToolSchemas option) and the skills filter (skillsFlags, the
// skills option).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, buildArgv, sanitizeSchema, skillsFlags } from '../index.mjs';
import { FAKE } from './helpers.mjs';

// What zod-to-json-schema writes for a nested definition, with a union inside.
const SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  definitions: {
    Target: {
      type: 'object',
      description: 'a target',
      properties: { id: { type: 'string' }, depth: { type: 'integer', default: 1 } },
      required: ['id'],
      additionalProperties: false,
    },
  },
  properties: {
    target: { $ref: '#/definitions/Target', description: 'what to open' },
    mode: { description: 'how', anyOf: [{ type: 'null' }, { type: 'string', enum: ['fast', 'slow'] }] },
  },
};

test('sanitizeSchema inlines refs, keeps descriptions and reports what it dropped', () => {
  const { schema, dropped } = sanitizeSchema(SCHEMA);
  assert.deepEqual(schema, {
    type: 'object',
    properties: {
      target: { type: 'object', description: 'what to open', properties: { id: { type: 'string' }, depth: { type: 'integer' } }, required: ['id'] },
      mode: { description: 'how', type: 'string', enum: ['fast', 'slow'] },
    },
  });
  const paths = dropped.map((d) => d.path).sort();
  assert.deepEqual(paths, [
    '/$schema',
    '/definitions',
    '/definitions/Target/additionalProperties',
    '/definitions/Target/properties/depth/default',
    '/properties/mode/anyOf/0',
  ]);
  assert.deepEqual(dropped.find((d) => d.path === '/properties/mode/anyOf/0').value, { type: 'null' });
});

test('sanitizeSchema refuses what it cannot inline, with the status named', () => {
  const recursive = { $defs: { N: { type: 'object', properties: { next: { $ref: '#/$defs/N' } } } }, $ref: '#/$defs/N' };
  assert.throws(() => sanitizeSchema(recursive), (e) => e.code === 'INVALID_ARGUMENT' && /recursive/.test(e.message));
  assert.throws(() => sanitizeSchema({ $ref: 'https://example.com/x.json' }), /only local/);
  assert.throws(() => sanitizeSchema(SCHEMA, { maxNodes: 2 }), (e) => e.code === 'LIMIT_EXCEEDED');
  assert.throws(() => sanitizeSchema('{}'), TypeError);
  assert.throws(() => sanitizeSchema(SCHEMA, { maxNodes: 0 }), (e) => e.code === 'INVALID_ARGUMENT');
});

test('skillsFlags gives each agent and version its own flags', () => {
  assert.deepEqual(skillsFlags({ flavor: 'pi', skills: 'none' }), { flags: ['--no-skills'], needsRead: false, tools: null });
  assert.deepEqual(skillsFlags({ flavor: 'pi', agentVersion: '0.73.1', skills: ['/s/alpha'], tools: ['echo'] }), {
    flags: ['--no-skills', '--skill', '/s/alpha'],
    needsRead: true,
    tools: ['echo', 'read'],
  });
  assert.deepEqual(skillsFlags({ flavor: 'omp', skills: ['git-*'] }).flags, ['--skills=git-*']);
  assert.deepEqual(skillsFlags({ flavor: 'pi', agentVersion: '0.37.2', skills: 'none' }).flags, ['--no-skills']);
  assert.throws(() => skillsFlags({ flavor: 'pi', agentVersion: '0.37.2', skills: ['a'] }), /cannot load a subset/);
  assert.throws(() => skillsFlags({ flavor: 'pi', skills: ['alpha'] }), (e) => e.code === 'INVALID_ARGUMENT' && /by path/.test(e.message));
  assert.throws(() => skillsFlags({ flavor: 'omp', skills: 'some' }), /"all", "none"/);
});

test('the skills option shapes the argv; a contradiction with noSkills is refused', () => {
  const argv = buildArgv({ executable: 'omp', tools: ['bash'], skills: ['git-*'], rpcDefaults: false });
  assert.deepEqual(argv, ['omp', '--mode', 'rpc', '--tools', 'bash,read', '--skills=git-*']);
  assert.throws(() => buildArgv({ skills: ['a'], noSkills: true }), /contradict/);
});

test('sanitizeToolSchemas sanitizes the host tools the agent is given', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'omprpc-node-schema-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rec = path.join(dir, 'session.jsonl');
  const hostTools = [{ name: 'open', description: 'Open', parameters: SCHEMA }];
  const c = await Client.start({ command: [FAKE], hostTools, sanitizeToolSchemas: true, recordPath: rec });
  await c.close();
  const frames = fs.readFileSync(rec, 'utf8').trim().split('\n').slice(1).map((l) => JSON.parse(l));
  const sent = frames.filter((f) => f.dir === 'out' && f.frame.type === 'set_host_tools');
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].frame.tools[0].parameters, sanitizeSchema(SCHEMA).schema);
});
