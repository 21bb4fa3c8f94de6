// Shared helpers of the omprpc Node tests: the fake agent's path, client start-up with
// guaranteed close, waiting for events.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../index.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The fake agent (env OMPRPC_FAKE_AGENT, else the repository's debug build). */
export const FAKE = process.env.OMPRPC_FAKE_AGENT
  ? path.resolve(process.env.OMPRPC_FAKE_AGENT)
  : path.resolve(here, '..', '..', '..', 'target', 'debug', 'omprpc-fake-agent');

/** Generous deadline for things that should happen at once. */
export const WAIT_MS = 10_000;

/** The start options of the fake agent with `args`, plus `extra` options. */
export function fakeOptions(args = [], extra = {}) {
  return { command: [FAKE, ...args], ...extra };
}

/**
 * A fake agent that outlives its stdin's end and SIGTERM, so stopping it takes stopGraceMs
 * (3 s): a waiter woken well before that was woken by close itself, not by the agent's end.
 */
export function slowToStopOptions() {
  return fakeOptions(['--scenario', 'ignore-term'], { stopGraceMs: 3000, killGraceMs: 100 });
}

/** Starts a fake agent; the client is closed when the test ends. */
export async function start(t, args = [], extra = {}) {
  const client = await Client.start(fakeOptions(args, extra));
  t.after(() => client.close());
  return client;
}

/** The next event of `type` from an iterator (others skipped), or throws after `ms`. */
export async function nextOfType(it, type, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no ${type} event within ${ms} ms`);
    let timer;
    const r = await Promise.race([
      it.next(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no ${type} event within ${ms} ms`)), left);
      }),
    ]).finally(() => clearTimeout(timer));
    if (r.done) throw new Error(`the event stream ended before a ${type} event`);
    if (r.value.type === type) return r.value;
  }
}

/** The next event of `type` taken with nextEvent() (others skipped). */
export async function nextEventOfType(client, type, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const ev = await client.nextEvent({ timeoutMs: Math.max(0, deadline - Date.now()) });
    if (ev.type === type) return ev;
  }
}

/** The agent's echo of the UI answer to `id` (`ui_response_seen.frame`). */
export async function seenAnswer(client, id, ms = WAIT_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const ev = await nextEventOfType(client, 'ui_response_seen', Math.max(0, deadline - Date.now()));
    if (ev.frame && ev.frame.id === id) return ev.frame;
  }
}

export function count(events, type) {
  return events.filter((e) => e.type === type).length;
}

export function find(events, type) {
  return events.find((e) => e.type === type);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `{promise, resolve, reject}` (Promise.withResolvers is Node 22+). */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
