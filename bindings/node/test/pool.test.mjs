// Streamed turns and promptAndWait turns hold no libuv pool thread while the agent works (their
// events and completions come through the one reactor call on the event descriptors), so more
// concurrent turns than the pool has threads (4 by default) never starve fs, dns or crypto.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import crypto from 'node:crypto';
import dns from 'node:dns/promises';
import { fileURLToPath } from 'node:url';
import { start, nextEventOfType } from './helpers.mjs';

const TURNS = 6; // more than UV_THREADPOOL_SIZE's default 4

/** fs, crypto and dns on the pool, all at once: how long they took. */
async function poolWork() {
  const t0 = Date.now();
  const [file, key, addr] = await Promise.all([
    fs.readFile(fileURLToPath(import.meta.url), 'utf8'),
    new Promise((resolve, reject) => crypto.pbkdf2('pw', 'salt', 1000, 32, 'sha256', (e, k) => (e ? reject(e) : resolve(k)))),
    dns.lookup('localhost'),
  ]);
  assert.match(file, /streamed turns/);
  assert.equal(key.length, 32);
  assert.ok(addr.address);
  return Date.now() - t0;
}

test(`${TURNS} streamed turns at once leave the pool to fs, dns and crypto`, async (t) => {
  const clients = await Promise.all(Array.from({ length: TURNS }, () => start(t)));
  // Each turn runs until aborted: it is open the whole time the pool is used below.
  const streams = clients.map((c) => c.stream('stream until abort'));
  for (const s of streams) assert.equal((await s.next()).value.kind, 'text');

  const took = await poolWork();
  // Would never finish were 4 turns holding the pool's 4 threads; generous for a loaded machine.
  assert.ok(took < 2000, `fs/crypto/dns took ${took} ms beside ${TURNS} turns`);

  // Every turn is still live: leaving each aborts it, and its client takes the next prompt.
  for (const s of streams) await s.close();
  const next = await Promise.all(clients.map((c) => c.stream('hello').finalTurn()));
  assert.deepEqual(next.map((turn) => turn.text), Array(TURNS).fill('pong'));
});

test(`${TURNS} promptAndWait turns at once leave the pool to fs, dns and crypto`, async (t) => {
  const clients = await Promise.all(Array.from({ length: TURNS }, () => start(t)));
  // Each turn runs until aborted; its first streamed event says it is running.
  const turns = clients.map((c) => c.promptAndWait('stream until abort'));
  await Promise.all(clients.map((c) => nextEventOfType(c, 'message_update')));

  // Would never finish were 4 turns holding the pool's 4 threads: a hang fails the test
  // instead (the turns are released below only once the pool work is done).
  let hung;
  const hang = new Promise((resolve, reject) => {
    hung = setTimeout(() => reject(new Error(`fs/crypto/dns not done beside ${TURNS} promptAndWait turns`)), 5000);
  });
  const took = await Promise.race([poolWork(), hang]).finally(() => clearTimeout(hung));
  // Generous for a loaded machine.
  assert.ok(took < 2000, `fs/crypto/dns took ${took} ms beside ${TURNS} promptAndWait turns`);

  // Every turn was still waiting: aborted now, each resolves, and its client takes the next.
  for (const c of clients) await c.abort();
  const ended = await Promise.all(turns);
  assert.deepEqual(ended.map((turn) => turn.outcome), Array(TURNS).fill('aborted'));
  const next = await Promise.all(clients.map((c) => c.promptAndWait('say hello')));
  assert.deepEqual(next.map((turn) => turn.assistantText), Array(TURNS).fill('pong'));
});
