// Type-checked (tsc --noEmit), never run: the ESM declarations cover the documented API.
import omprpc, {
  Client, ClosedError, CommandError, OmprpcError, TimeoutError, Status, TIMEOUT_INFINITE, buildArgv,
  Summarizer, summarize, envAllowlisted, promptFromContent, sanitizeSchema, skillsFlags,
  type AgentEvent, type HostToolContext, type StartOptions, type Turn, type TurnOutcome, type UiRequest,
  type FailedAttempt, type FailedAttemptThen, type Compaction, type PromptCompleteEvent,
} from 'omprpc';

export async function main(fake: string): Promise<string | null> {
  const options: StartOptions = { command: [fake], maxEventHistory: null, turnTimeoutMs: 60_000, env: { A: 'b' } };
  const argv: string[] = buildArgv(options);
  void argv;
  const sandboxed: StartOptions = { ...options, launcher: ['bwrap', '--dev-bind', '/', '/', '--'], launcherEnv: 'process', launcherShell: false };
  void sandboxed;
  const client: Client = await Client.start({
    ...options,
    hostTools: [
      {
        name: 'echo_host',
        description: 'Echo',
        parameters: { type: 'object', properties: { message: { type: 'string' } } },
        handler: async (args: { message: string }, ctx: HostToolContext) => {
          ctx.update('working');
          if (ctx.signal.aborted) throw new Error('cancelled');
          return { content: [{ type: 'text', text: args.message }], details: { id: ctx.toolCallId } };
        },
      },
    ],
  });
  client.on('event', (ev: AgentEvent) => void ev.type);
  client.on('prompt_complete', (ev) => {
    const done = ev as PromptCompleteEvent;
    const how: TurnOutcome | 'failed' = done.outcome;
    void [how, done.requestId, done.error?.message];
  });
  client.on('message_update', (ev) => void ev.assistantMessageEvent);
  client.once('close', (reason: unknown) => void reason);
  const turn: Turn = await client.promptAndWait('say hello', { timeoutMs: 10_000, signal: AbortSignal.timeout(60_000) });
  const events: AgentEvent[] = turn.events;
  void events;
  const outcome: TurnOutcome = turn.outcome;
  const stop: string | null = turn.stopReason;
  const failed: string | null = turn.errorMessage;
  void [outcome, stop, failed, turn.usage];
  // @ts-expect-error: not an outcome
  const notOutcome: TurnOutcome = 'done';
  void notOutcome;
  const settledOutcomes: TurnOutcome[] = ['agent_settled', 'aborted', 'agent_end', 'prompt_result', 'not_invoked'];
  const attempts: number = turn.attempts;
  const settled: boolean = turn.settled;
  const failedAttempts: FailedAttempt[] = turn.failedAttempts;
  for (const f of failedAttempts) {
    const n: number = f.attempt;
    const error: string | null = f.error;
    const then: FailedAttemptThen = f.then;
    const delay: number | undefined = f.delayMs;
    // @ts-expect-error: delayMs may be absent
    const delayAlways: number = f.delayMs;
    // @ts-expect-error: not a `then`
    const notThen: FailedAttemptThen = 'later';
    void [n, error, then, delay, delayAlways, notThen];
  }
  const compactions: Compaction[] = turn.compactions;
  const overflow = compactions.filter((c) => c.reason === 'overflow' && c.willRetry === true && c.aborted === false);
  const compactionError: string | null | undefined = compactions[0]?.errorMessage;
  // @ts-expect-error: a number is no attempt list
  const notFailed: FailedAttempt[] = turn.attempts;
  void [settledOutcomes, attempts, settled, overflow, compactionError, notFailed];
  if (turn.summary) void [turn.summary.attempts, turn.summary.failedAttempts[0]?.then, turn.summary.compactions[0]?.reason];
  if (turn.summary) {
    // Nested tool calls as a tree: the model's calls, each with its inner calls' ids.
    const roots = turn.summary.toolCalls.filter((c) => c.parentToolCallId === null);
    const innerIds: string[] = roots.flatMap((c) => c.children);
    // @ts-expect-error: children are ids, not items
    const notItems: { toolName: string }[] = roots[0]!.children;
    void [innerIds, notItems];
  }
  const id: string = await client.prompt('needs ui', { streamingBehavior: 'steer' });
  void id;
  const ac = new AbortController();
  const req: UiRequest = await client.nextUiRequest({ timeoutMs: TIMEOUT_INFINITE, signal: ac.signal });
  client.uiSendValue(req.id, 'ok');
  client.uiCancel(req.id, { timedOut: true });
  client.setUiPolicy({ confirm: false, input: null });
  await client.waitForIdle({ timeoutMs: null });
  for await (const ev of client.events({ types: ['agent_end'], highWaterMark: 100 })) {
    if (ev.type === 'agent_end') break;
  }
  const state = await client.getState<{ sessionId: string }>();
  const bash = await client.bash('echo hi');
  const data = await client.request<{ text: string | null }>('get_last_assistant_text', null, { timeoutMs: 1000 });
  const tools = await client.setHostTools([]);
  const schemes = await client.setHostUriSchemes([{ scheme: 'memo', handler: async (r) => ({ content: r.url }) }]);
  void [state.sessionId, bash.exitCode, data.text, tools.toolNames, schemes.schemes];
  const added = await client.addHostTools([{ name: 'more', description: 'd', parameters: {}, handler: (a: { n: number }) => String(a.n) }]);
  const left = await client.removeHostTools(['more'], { timeoutMs: 1000 });
  const addedSchemes = await client.addHostUriSchemes(['plain', { scheme: 'memo', handler: async (r) => ({ content: r.url }) }]);
  const leftSchemes = await client.removeHostUriSchemes(['memo']);
  const unregistered = await client.unregisterHostUriScheme('plain');
  void [added.toolNames, left.toolNames, addedSchemes.schemes, leftSchemes.schemes, unregistered.schemes];
  try {
    await client.steer('x');
  } catch (e) {
    if (e instanceof CommandError) void [e.command, e.error, e.errorCode, e.status, e.code];
    else if (e instanceof TimeoutError || e instanceof ClosedError) void e.details.message;
    else if (e instanceof OmprpcError && e.status === Status.PANIC) throw e;
  }
  client.setPolicyHandler(async (ev, ctx) => (ev.toolName === 'bash' ? { allow: false, reason: ctx.toolCallId } : true));
  client.policyVerdict('id', false, 'no');
  const summary = turn.summary ? turn.summary.finalText : await summarize(turn.events, { model: 'm' }).then((s) => s.finalText);
  const sm = new Summarizer();
  sm.feed({ type: 'agent_end', messages: [] });
  void [summary, sm.summary().complete, envAllowlisted({ passthrough: ['X'] }).PATH, promptFromContent([{ type: 'text', text: 'x' }]).message];
  sm.close();
  const sanitized = sanitizeSchema({ type: 'object' }, { maxNodes: 100 });
  const skills = skillsFlags({ flavor: 'pi', agentVersion: '0.73.1', skills: ['./skills/a'], tools: ['bash'] });
  void [sanitized.schema, sanitized.dropped[0]?.path, skills.flags, skills.needsRead, skills.tools?.length];
  void buildArgv({ skills: 'none', sanitizeToolSchemas: true });
  const info = client.info();
  const handle: bigint = client.eventHandle();
  void [info.pid, client.stderr(), client.protocolErrors(), client.eventFd(), handle, client.closed];
  client.unref().ref();
  await client.close();
  void omprpc.version();
  return turn.assistantText;
}
