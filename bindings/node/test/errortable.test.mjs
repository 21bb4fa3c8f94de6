// The error table (tests/fixtures/error-table.json, issue 23 §4) through the Node API: every
// row's failure caused on the fake agent, and the rejection checked — an OmprpcError whose
// `status`, `code` and `message` are the core's — as the C, Go and Python suites check theirs.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Client, OmprpcError } from '../index.mjs';
import { FAKE } from './helpers.mjs';

const table = JSON.parse(fs.readFileSync(new URL('../../../tests/fixtures/error-table.json', import.meta.url), 'utf8'));

/** `snake_case` → `camelCase`: the start options as a Node program writes them. */
const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** The row's start options: the fake agent with its arguments and environment, then the row's options. */
function startOptions(row) {
  const options = { command: [FAKE, ...(row.agent_args ?? [])], env: row.agent_env ?? {} };
  for (const [k, v] of Object.entries(row.options ?? {})) options[camel(k)] = v;
  return options;
}

/**
 * promptAndWait in the background; once the agent streams, its prompt was sent and its wait
 * holds the prompt lifecycle, and collectEvents meets it. Then abort, which ends the wait.
 */
async function collectWhilePrompting(client, message) {
  const waiting = client.promptAndWait(message).catch(() => {}); // ended by the abort; how is not the row's business
  const deadline = Date.now() + 10_000;
  while (!(await client.request('get_state')).isStreaming) {
    if (Date.now() > deadline) throw new Error('the agent never streamed');
  }
  try {
    await client.collectEvents();
  } finally {
    await client.abort();
    await waiting;
  }
}

/** Makes the row's call on `client`; resolves to nothing when it did not fail. */
async function makeCall(client, call) {
  switch (call.op) {
    case 'request_after_close':
      await client.close();
      return client.request(call.type);
    case 'request':
      return client.request(call.type, call.params);
    case 'prompt_and_wait':
      return client.promptAndWait(call.message);
    case 'host_tool_result':
      return client.hostToolResult(call.id, call.result);
    case 'collect_while_prompting':
      return collectWhilePrompting(client, call.message);
  }
  throw new Error(`unknown op ${call.op} in the error table`);
}

/** The ways `err` differs from what the row says. */
function rowProblems(row, err) {
  if (!(err instanceof OmprpcError)) return [`got ${err?.stack ?? err}, want an OmprpcError with status ${row.status}`];
  const problems = [];
  if (err.status !== row.code || err.code !== row.status) problems.push(`status ${err.status} ${err.code}, the table says ${row.code} ${row.status}`);
  if (row.message !== undefined && err.message !== row.message) problems.push(`message ${JSON.stringify(err.message)}, the table says ${JSON.stringify(row.message)}`);
  if (row.message === undefined && !err.message.startsWith(row.message_prefix)) problems.push(`message ${JSON.stringify(err.message)} does not start ${JSON.stringify(row.message_prefix)}`);
  return problems;
}

test('the error table has its rows', () => {
  assert.ok(table.rows.length >= 10, `${table.rows.length} rows`);
});

for (const row of table.rows) {
  test(`error table: ${row.name}`, { skip: row.not_in?.node, timeout: 30_000 }, async () => {
    let err;
    let client;
    try {
      client = await Client.start(startOptions(row));
      if (row.call) await makeCall(client, row.call);
    } catch (e) {
      err = e;
    } finally {
      await client?.close();
    }
    if (row.call && !client) assert.fail(`start failed: ${err?.stack ?? err}`);
    const problems = rowProblems(row, err);
    assert.deepEqual(problems, []);
  });
}
