// Incremental host registration (omp protocol 1.1: add_/remove_host_tools,
// add_/remove_host_uri_schemes) against the fake agent's `--protocol 1.1`: the agent's
// registered set (get_state dumpTools, its answers) and which handler answers its calls follow
// each change; refusals (an agent without the commands, pi, a reserved scheme, bad names) keep
// the handlers as they were.
import test from 'node:test';
import assert from 'node:assert/strict';
import { CommandError, InvalidArgumentError } from '../index.mjs';
import { start, find, nextEventOfType } from './helpers.mjs';

const P11 = ['--protocol', '1.1'];

/** A host tool `name` whose handler records its arguments in `calls`. */
function recordingTool(name, calls) {
  return {
    name,
    description: `${name} from the Node host`,
    parameters: { type: 'object', properties: { message: { type: 'string' } } },
    handler: async (args) => {
      calls.push({ name, args });
      return `${name}:${args.message}`;
    },
  };
}

const agentToolNames = async (c) => (await c.getState()).dumpTools.map((t) => t.name).filter((n) => n !== 'read');

/** The end of the `needs host tool` call (of echo_host) in a turn. */
async function echoHostEnd(c) {
  const turn = await c.promptAndWait('needs host tool');
  return find(turn.events, 'tool_execution_end');
}

test('host tools added and removed: the agent sees each change, the handlers follow', async (t) => {
  const calls = [];
  const c = await start(t, P11);
  assert.deepEqual(await c.addHostTools([recordingTool('echo_host', calls)]), { toolNames: ['echo_host'] });
  assert.deepEqual(await c.addHostTools([recordingTool('other_host', calls)]), { toolNames: ['echo_host', 'other_host'] });
  assert.deepEqual(await agentToolNames(c), ['echo_host', 'other_host']);
  let end = await echoHostEnd(c);
  assert.deepEqual(calls, [{ name: 'echo_host', args: { message: 'hello' } }]);
  assert.equal(end.result.content[0].text, 'echo_host:hello');
  assert.equal(end.isError, false);

  // Adding a tool of a registered name replaces it, handler too.
  const replaced = [];
  assert.deepEqual(await c.addHostTools([recordingTool('echo_host', replaced)]), { toolNames: ['other_host', 'echo_host'] });
  await echoHostEnd(c);
  assert.equal(calls.length, 1);
  assert.equal(replaced.length, 1);

  assert.deepEqual(await c.removeHostTools(['echo_host']), { toolNames: ['other_host'] });
  assert.deepEqual(await agentToolNames(c), ['other_host']);
  // The agent still calls echo_host: no handler runs, the library answers with an error.
  end = await echoHostEnd(c);
  assert.equal(replaced.length, 1, 'a removed tool has no handler');
  assert.equal(end.isError, true);
  assert.match(end.result.content[0].text, /echo_host/);
  // registerHostTool() re-sends the binding's set: the agent's, without the removed tool.
  assert.deepEqual(await c.registerHostTool(recordingTool('third_host', calls)), { toolNames: ['other_host', 'third_host'] });
});

test('removing a name that is not registered changes nothing; bad names are refused', async (t) => {
  const calls = [];
  const c = await start(t, P11);
  await c.addHostTools([recordingTool('echo_host', calls)]);
  assert.deepEqual(await c.removeHostTools(['no_such_tool']), { toolNames: ['echo_host'] });
  await assert.rejects(c.removeHostTools(['echo_host', '']), InvalidArgumentError);
  await assert.rejects(c.removeHostTools(['echo_host', 7]), InvalidArgumentError);
  await assert.rejects(c.removeHostTools('echo_host'), TypeError);
  await assert.rejects(c.removeHostUriSchemes([null]), InvalidArgumentError);
  // None of the refused removals took echo_host away, in the agent or in the binding.
  assert.deepEqual(await agentToolNames(c), ['echo_host']);
  const end = await echoHostEnd(c);
  assert.equal(end.isError, false);
  assert.equal(calls.length, 1);
});

test('an agent without the commands refuses them; the handler is not kept', async (t) => {
  const calls = [];
  const c = await start(t); // omp without protocol 1.1
  await assert.rejects(c.addHostTools([recordingTool('echo_host', calls)]), CommandError);
  await assert.rejects(c.addHostUriSchemes([{ scheme: 'memo', handler: () => 'x' }]), CommandError);
  const end = await echoHostEnd(c);
  assert.equal(calls.length, 0);
  assert.equal(end.isError, true);
  // The register* methods re-send the binding's set, which holds nothing refused.
  assert.deepEqual(await c.registerHostTool(recordingTool('other_host', calls)), { toolNames: ['other_host'] });
  assert.deepEqual(await c.registerHostUriScheme({ scheme: 'docs' }), { schemes: ['docs'] });
});

test('pi refuses incremental host tools in the library (its host tools are fixed at start)', async (t) => {
  const calls = [];
  const c = await start(t, ['--flavor', 'pi'], { flavor: 'pi', stopGraceMs: 300 });
  await assert.rejects(c.addHostTools([recordingTool('echo_host', calls)]), (e) => {
    assert.ok(e instanceof InvalidArgumentError, String(e));
    assert.match(e.message, /add_host_tools: the host tools of a bridged client are registered at start/);
    return true;
  });
  await assert.rejects(c.removeHostTools(['echo_host']), /remove_host_tools: the host tools of a bridged client/);
});

test('host URI schemes added and removed: the handlers follow the agent', async (t) => {
  const reads = [];
  const c = await start(t, P11);
  const memo = {
    scheme: 'Memo',
    handler: async (req) => {
      reads.push(req);
      return { content: 'memo notes', contentType: 'text/plain' };
    },
  };
  assert.deepEqual(await c.addHostUriSchemes([memo]), { schemes: ['memo'] });
  assert.deepEqual(await c.addHostUriSchemes(['docs']), { schemes: ['memo', 'docs'] });
  await c.promptAndWait('needs host uri');
  let seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(reads.length, 1);
  assert.equal(reads[0].url, 'memo://notes/today?range=0-99');
  assert.equal(seen.frame.content, 'memo notes');

  // A reserved scheme: the agent refuses the batch, nothing changes.
  await assert.rejects(c.addHostUriSchemes([{ scheme: 'memo', handler: () => 'other' }, 'omp']), (e) => {
    assert.ok(e instanceof CommandError, String(e));
    assert.equal(e.errorCode, 'host_uri_denied');
    return true;
  });
  await c.promptAndWait('needs host uri');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(seen.frame.content, 'memo notes', 'the refused batch did not replace the memo handler');
  assert.equal(reads.length, 2);

  // Names as the core reads them (trimmed, any case).
  assert.deepEqual(await c.removeHostUriSchemes([' MEMO ']), { schemes: ['docs'] });
  await c.promptAndWait('needs host uri');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(reads.length, 2, 'a removed scheme has no handler');
  assert.equal(seen.frame.isError, true);
  assert.deepEqual(await c.registerHostUriScheme({ scheme: 'notes' }), { schemes: ['docs', 'notes'] });
});

test('unregisterHostUriScheme() removes one scheme and keeps the others', async (t) => {
  const reads = [];
  const c = await start(t);
  assert.deepEqual(await c.setHostUriSchemes([' Plain ']), { schemes: ['plain'] }, 'a bare name stands for {scheme}');
  await c.registerHostUriScheme({ scheme: 'memo', handler: (req) => (reads.push(req), 'kept') });
  await c.registerHostUriScheme({ scheme: 'docs', handler: () => 'docs' });
  assert.deepEqual(await c.unregisterHostUriScheme('DOCS'), { schemes: ['plain', 'memo'] });
  await c.promptAndWait('needs host uri');
  let seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(seen.frame.content, 'kept');
  assert.deepEqual(await c.unregisterHostUriScheme('memo'), { schemes: ['plain'] });
  await c.promptAndWait('needs host uri');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(seen.frame.isError, true);
  assert.equal(reads.length, 1);
});
