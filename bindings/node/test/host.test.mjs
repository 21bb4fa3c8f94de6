// Host tools and host URIs (mirrors tests/c/test_host.c): handlers with updates, object
// results and errors, xd:// renaming, cancellation (ctx.signal), calls the library answers
// itself, registration later, manual answers, URI handlers.
import test from 'node:test';
import assert from 'node:assert/strict';
import { CancelledError, ClosedError, NotFoundError } from '../index.mjs';
import { WAIT_MS, start, count, find, nextOfType, nextEventOfType, sleep, deferred } from './helpers.mjs';

const ECHO_SPEC = {
  name: 'echo_host',
  description: 'Echo from the Node host',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'], additionalProperties: false },
};

test('a host tool handler streams an update and returns a result', async (t) => {
  const calls = [];
  const c = await start(t, [], {
    hostTools: [
      {
        ...ECHO_SPEC,
        handler: async (args, ctx) => {
          calls.push({ args, ctx });
          assert.equal(ctx.update('working:' + args.message), true);
          await sleep(10);
          return 'host:' + args.message;
        },
      },
    ],
  });
  const tools = (await c.getState()).dumpTools;
  assert.equal(tools.at(-1).name, 'echo_host');
  const turn = await c.promptAndWait('needs host tool', { timeoutMs: WAIT_MS });
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].args, { message: 'hello' });
  assert.equal(calls[0].ctx.callId, 'host-call-1');
  assert.equal(calls[0].ctx.toolCallId, 'toolu_host_1');
  assert.equal(calls[0].ctx.toolName, 'echo_host');
  assert.equal(calls[0].ctx.signal.aborted, false);
  assert.equal(count(turn.events, 'tool_execution_update'), 1);
  assert.equal(count(turn.events, 'tool_execution_end'), 1);
  const upd = find(turn.events, 'tool_execution_update');
  assert.equal(upd.partialResult.content[0].text, 'working:hello');
  assert.equal(upd.toolName, 'echo_host');
  const end = find(turn.events, 'tool_execution_end');
  assert.equal(end.result.content[0].text, 'host:hello');
  assert.equal(end.isError, false);
  // the call is finished: more answers name no open call
  assert.throws(() => c.hostToolResult('host-call-1', 'again'), NotFoundError);
  assert.throws(() => c.hostToolUpdate('no-such-call', 'x'), NotFoundError);
});

test('object results, thrown errors (with or without a result object)', async (t) => {
  const c = await start(t, [], { hostTools: [ECHO_SPEC] });
  await c.registerHostTool({
    ...ECHO_SPEC,
    handler: async (args, ctx) => {
      ctx.update({ content: [{ type: 'text', text: 'half' }], details: { step: 1 } });
      throw Object.assign(new Error('it broke'), { result: { content: [{ type: 'text', text: 'it broke' }], details: { k: 1 } } });
    },
  });
  let turn = await c.promptAndWait('needs host tool');
  assert.equal(find(turn.events, 'tool_execution_update').partialResult.content[0].text, 'half');
  let end = find(turn.events, 'tool_execution_end');
  assert.equal(end.result.content[0].text, 'it broke');
  assert.equal(end.result.details.k, 1);
  assert.equal(end.isError, true);
  await c.registerHostTool({ ...ECHO_SPEC, handler: () => { throw new Error('plain failure'); } });
  turn = await c.promptAndWait('needs host tool');
  end = find(turn.events, 'tool_execution_end');
  assert.equal(end.result.content[0].text, 'plain failure');
  assert.equal(end.isError, true);
  await c.registerHostTool({ ...ECHO_SPEC, handler: () => ({ content: [{ type: 'text', text: 'obj' }], details: { ok: true } }) });
  turn = await c.promptAndWait('needs host tool');
  end = find(turn.events, 'tool_execution_end');
  assert.equal(end.result.content[0].text, 'obj');
  assert.equal(end.result.details.ok, true);
  assert.equal(end.isError, false);
});

test('xd:// dispatch: update and end are renamed to the host tool', async (t) => {
  const c = await start(t, [], { hostTools: [{ ...ECHO_SPEC, handler: (args, ctx) => (ctx.update('working'), 'host:' + args.message) }] });
  const turn = await c.promptAndWait('needs xd tool');
  const s = find(turn.events, 'tool_execution_start');
  assert.equal(s.toolName, 'write');
  assert.equal(s.toolCallId, 'toolu_host_1');
  const u = find(turn.events, 'tool_execution_update');
  assert.equal(u.toolName, 'echo_host');
  assert.equal(u.toolCallId, 'toolu_host_1');
  const e = find(turn.events, 'tool_execution_end');
  assert.equal(e.toolName, 'echo_host');
  assert.equal(e.toolCallId, 'toolu_host_1');
  assert.equal(e.result.content[0].text, 'host:hello');
});

test('host_tool_cancel aborts ctx.signal; the late result is dropped', async (t) => {
  let signal = null;
  let reason = null;
  let updateAfterCancel = null;
  const finished = deferred();
  const c = await start(t, [], {
    hostTools: [
      {
        ...ECHO_SPEC,
        handler: async (args, ctx) => {
          signal = ctx.signal;
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
          reason = ctx.signal.reason;
          updateAfterCancel = ctx.update('still here?');
          finished.resolve();
          return 'too late';
        },
      },
    ],
  });
  const it = c.events({ types: ['host_tool_cancel'] });
  await c.promptAndWait('cancel host tool');
  const cancel = await nextOfType(it, 'host_tool_cancel');
  assert.equal(cancel.targetId, 'host-call-1');
  await finished.promise;
  assert.equal(signal.aborted, true);
  assert.ok(reason instanceof CancelledError);
  assert.equal(updateAfterCancel, false);
  await sleep(20);
  assert.throws(() => c.hostToolResult('host-call-1', 'again'), (e) => e instanceof NotFoundError || e instanceof CancelledError);
  await it.return();
});

test('close aborts running host tool handlers', async (t) => {
  let reason = null;
  const started = deferred();
  const c = await start(t, [], {
    hostTools: [
      {
        ...ECHO_SPEC,
        handler: (args, ctx) => new Promise((resolve) => {
          started.resolve();
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            resolve('closed');
          });
        }),
      },
    ],
  });
  const turn = c.promptAndWait('needs host tool').catch((e) => e);
  await started.promise;
  await c.close();
  assert.ok(reason instanceof ClosedError);
  assert.ok((await turn) instanceof ClosedError);
});

async function checkLibraryAnswered(c, message, callId) {
  await c.promptAndWait(message);
  const seen = await nextEventOfType(c, 'host_result_seen');
  assert.equal(seen.frame.type, 'host_tool_result');
  assert.equal(seen.frame.id, callId);
  assert.equal(seen.frame.isError, true);
  assert.ok(Array.isArray(seen.frame.result.content));
  assert.throws(() => c.hostToolResult(callId, 'x'), NotFoundError);
}

test('the library answers bad calls by itself; handlers are not called', async (t) => {
  let called = 0;
  const c = await start(t, [], { hostTools: [{ ...ECHO_SPEC, handler: () => (called++, 'x') }] });
  await checkLibraryAnswered(c, 'bad host call', 'host-call-bad');
  await checkLibraryAnswered(c, 'unknown host tool', 'host-call-unknown');
  assert.equal(called, 0);
});

test('setHostTools later; answering by hand from the event stream', async (t) => {
  const c = await start(t);
  const data = await c.setHostTools([ECHO_SPEC, { name: 'other', description: 'd', parameters: { type: 'object' }, label: 'Other', hidden: true }]);
  assert.deepEqual(data.toolNames, ['echo_host', 'other']);
  // no handler: the host_tool_call is an event like any other, answered with the raw calls
  const it = c.events({ types: ['host_tool_call'] });
  const turnP = c.promptAndWait('needs host tool');
  const call = await nextOfType(it, 'host_tool_call');
  assert.equal(call.toolName, 'echo_host');
  c.hostToolUpdate(call.id, 'working:hello');
  c.hostToolResult(call.id, 'host:hello');
  const turn = await turnP;
  assert.equal(find(turn.events, 'tool_execution_end').result.content[0].text, 'host:hello');
  await it.return();
  // register, then unregister
  assert.deepEqual((await c.registerHostTool({ ...ECHO_SPEC, name: 'third', handler: () => 'x' })).toolNames, ['echo_host', 'other', 'third']);
  assert.deepEqual((await c.unregisterHostTool('other')).toolNames, ['echo_host', 'third']);
});

test('host URI handlers: read, write, error; unregistered schemes', async (t) => {
  const requests = [];
  let mode = 'read';
  const c = await start(t, [], {
    hostUriSchemes: [
      {
        scheme: 'memo',
        description: 'notes',
        writable: true,
        handler: async (req, ctx) => {
          requests.push({ req, ctx });
          if (mode === 'read') return { content: 'hello notes', contentType: 'text/plain' };
          if (mode === 'write') return {};
          throw new Error('no such note');
        },
      },
    ],
  });
  await c.promptAndWait('needs host uri');
  let seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(requests[0].req.operation, 'read');
  assert.equal(requests[0].req.url, 'memo://notes/today');
  assert.equal(requests[0].ctx.requestId, 'uri-1');
  assert.equal(seen.frame.id, 'uri-1');
  assert.equal(seen.frame.content, 'hello notes');
  assert.equal(seen.frame.contentType, 'text/plain');
  assert.throws(() => c.hostUriResult('uri-1', {}), NotFoundError);
  mode = 'write';
  await c.promptAndWait('needs host uri write');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(requests[1].req.operation, 'write');
  assert.equal(requests[1].req.content, 'new text');
  assert.equal(seen.frame.error, undefined);
  mode = 'error';
  await c.promptAndWait('needs host uri');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(seen.frame.error, 'no such note');
  assert.equal(seen.frame.isError, true);
  assert.throws(() => c.hostUriResult('no-such-request', {}), NotFoundError);
  // replacing the set
  const data = await c.setHostUriSchemes([{ scheme: 'Docs' }]);
  assert.deepEqual(data.schemes, ['docs']);
  // memo:// is no longer registered: the library answers with an error
  await c.promptAndWait('needs host uri');
  seen = await nextEventOfType(c, 'host_uri_result_seen');
  assert.equal(seen.frame.isError, true);
  assert.ok(seen.frame.error);
  assert.equal(requests.length, 3);
});

test('host URIs answered by hand', async (t) => {
  const c = await start(t, [], { hostUriSchemes: [{ scheme: 'memo', writable: true }] });
  const it = c.events({ types: ['host_uri_request', 'host_uri_result_seen'] });
  const turnP = c.promptAndWait('needs host uri');
  const req = await nextOfType(it, 'host_uri_request');
  c.hostUriResult(req.id, { content: 'by hand' });
  await turnP;
  const seen = await nextOfType(it, 'host_uri_result_seen');
  assert.equal(seen.frame.content, 'by hand');
  await it.return();
});

test('handlers are served with nothing else pending (after a nextEvent, after prompt())', async (t) => {
  const called = deferred();
  const c = await start(t, [], { hostTools: [{ ...ECHO_SPEC, handler: (args) => (called.resolve(args), 'host:' + args.message) }] });
  assert.equal((await c.nextEvent({ timeoutMs: WAIT_MS })).type, 'ready');
  await c.prompt('needs host tool'); // acknowledged; no call is pending afterwards
  const timer = setTimeout(() => called.reject(new Error('the handler was never called')), 5000);
  assert.deepEqual(await called.promise, { message: 'hello' });
  clearTimeout(timer);
  await c.waitForIdle({ timeoutMs: WAIT_MS });
});
