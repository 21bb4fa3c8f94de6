// make windows-bindings-test: the Node binding on a Windows node.exe, under Wine, through its
// public API (tests/windows/bindings/run.sh runs it from a project whose node_modules holds the
// binding, with koffi's win32-x64 part).
//
//   node check.mjs full      the library found where expected, a call with an owned string out
//                            and back, an option error as its typed error, then the fake agent:
//                            a streamed turn, or — while the core cannot start an agent on
//                            Windows — the start's "not ported yet" IO error, typed
//   node check.mjs lookup    only: the library found where expected
//   node check.mjs missing   no library anywhere: load() fails naming every place it tried
//
// Environment: EXPECTED_VERSION; EXPECTED_LIBRARY (a directory the loaded library lies under, or
// the bare name the system loader was given); OMPRPC_AGENT (the fake agent, full);
// EXPECTED_PLACES (missing: the texts the error must hold, separated by "|"). Prints PASS
// lines; any failure throws. Output goes through fs.writeSync: under Wine 8.0, Node's
// process.stdout on a pipe fails to open (EBADF), a file works; run.sh gives it files.
import fs from 'node:fs';
import path from 'node:path';
import * as omprpc from 'omprpc';

const say = (line) => fs.writeSync(1, `${line}\n`);
const mode = process.argv[2] || 'full';

function samePlace(loaded, expected) {
  if (!expected.includes('/') && !expected.includes('\\')) return loaded === expected;
  const canon = (p) => fs.realpathSync(p).toLowerCase();
  return canon(loaded).startsWith(canon(expected) + path.sep);
}

if (mode === 'missing') {
  let text = null;
  try {
    omprpc.load();
  } catch (e) {
    text = e.message;
  }
  if (text === null) throw new Error('load() succeeded with no library anywhere');
  const places = process.env.EXPECTED_PLACES.split('|');
  for (const place of places) {
    if (!text.includes(place)) throw new Error(`the error does not name ${JSON.stringify(place)}:\n${text}`);
  }
  say(`windows-bindings-test: PASS node: no library -> load() fails naming every place (${places.length} checked)`);
  process.exit(0);
}

if (process.platform !== 'win32') throw new Error(`platform ${process.platform}`);
const loaded = omprpc.load();
if (!samePlace(loaded, process.env.EXPECTED_LIBRARY)) throw new Error(`loaded ${loaded}, expected ${process.env.EXPECTED_LIBRARY}`);
if (omprpc.version() !== process.env.EXPECTED_VERSION) throw new Error(`library version ${omprpc.version()}`);
if (omprpc.abiVersion() !== 2) throw new Error(`ABI ${omprpc.abiVersion()}`);
say(`windows-bindings-test: PASS node ${process.version} on ${process.platform}-${process.arch}: omprpc ${omprpc.version()} loaded from ${loaded}`);
if (mode === 'lookup') process.exit(0);

// An owned string out of the library and freed by it, UTF-8 both ways.
const content = omprpc.promptFromContent([
  { type: 'text', text: 'h\u00e9llo' },
  { type: 'text', text: 'w\u00f6rld' },
]);
if (content.message !== 'h\u00e9llo\n\nw\u00f6rld' || content.images.length !== 0) throw new Error(`content ${JSON.stringify(content)}`);
// An option the core refuses before anything starts: its status and message, typed.
let bad = null;
try {
  await omprpc.Client.start({ command: ['unused.exe'], flavor: 'bogus' });
} catch (e) {
  bad = e;
}
if (!(bad instanceof omprpc.InvalidArgumentError) || bad.code !== 'INVALID_ARGUMENT' || !/flavor/.test(bad.message)) {
  throw new Error(`flavor 'bogus': ${bad && bad.constructor.name} ${bad && bad.code} ${bad && bad.message}`);
}
say('windows-bindings-test: PASS node: promptFromContent round trip; a bad option is InvalidArgumentError');

let client;
try {
  client = await omprpc.Client.start({ command: [process.env.OMPRPC_AGENT], startupTimeoutMs: 30_000 });
} catch (e) {
  // The core's Windows port does not spawn yet (docs/windows.md): the start must fail with
  // exactly that IO error, nothing else. Once it spawns, this branch is never taken.
  if (!(e instanceof omprpc.IoError) || e.code !== 'IO' || !e.message.includes('is not ported yet')) throw e;
  say(`windows-bindings-test: NOT PORTED node: starting the fake agent fails as the core says, IoError: ${e.message}`);
  process.exit(0);
}
const deltas = [];
try {
  client.on('message_update', (ev) => {
    if (ev.assistantMessageEvent?.type === 'text_delta') deltas.push(ev.assistantMessageEvent.delta);
  });
  const turn = await client.promptAndWait('ping', { timeoutMs: 60_000 });
  if (turn.assistantText !== 'pong') throw new Error(`assistantText ${turn.assistantText}`);
} finally {
  await client.close();
}
if (deltas.join('') !== 'pong') throw new Error(`streamed ${JSON.stringify(deltas)}`);
say(`windows-bindings-test: PASS node: a turn from the fake agent, streamed ${JSON.stringify(deltas)}`);
