// Type-checked (tsc --noEmit), never run: the generated protocol types (protocol.gen.d.ts).
// Each `@ts-expect-error` line must fail to compile (tsc reports an unused one), so these
// prove what the declarations reject as well as what they accept.
import {
  Client, isKnownEvent, isKnownUiRequest, EVENT_TYPES,
  type AgentEvent, type AnyEvent, type KnownEvent, type UnknownEvent, type AnyUiRequest,
  type SessionState, type GetAvailableModelsResult, type CycleModelResult, type CompactOptions,
} from 'omprpc';

/** `switch (ev.type)` on the known union narrows to one event's interface. */
export function describe(ev: KnownEvent): string {
  switch (ev.type) {
    case 'agent_end': {
      const n: number = ev.messages.length;
      // @ts-expect-error: agent_end has no `message`
      void ev.message;
      return `end ${n}`;
    }
    case 'tool_execution_start': {
      const name: string = ev.toolName;
      const intent: string | undefined = ev.intent;
      // @ts-expect-error: a toolName is a string
      const wrong: number = ev.toolName;
      void wrong;
      return `${name} ${intent}`;
    }
    case 'notice': {
      const level: 'info' | 'warning' | 'error' = ev.level;
      // @ts-expect-error: not one of the notice levels
      if (ev.level === 'fatal') return 'never';
      return level;
    }
    case 'extension_ui_request':
      // the event is the UI request union; isKnownUiRequest narrows it by method
      if (isKnownUiRequest(ev) && ev.method === 'select') return ev.options.join(',');
      return ev.method;
    default:
      return ev.type;
  }
}

/** Anything handed out (AgentEvent, AnyEvent): isKnownEvent narrows it, UnknownEvent stays usable. */
export function route(ev: AgentEvent | AnyEvent): string {
  if (isKnownEvent(ev)) {
    if (ev.type === 'message_update') return String(ev.assistantMessageEvent?.type);
    // @ts-expect-error: no event is of this type
    if (ev.type === 'no_such_event') return 'never';
    // @ts-expect-error: narrowed to KnownEvent, not to an AgentEvent intersection that takes any member
    void ev.noSuchMember;
    return describe(ev);
  }
  return ev.type;
}

export function unknownEvents(ev: UnknownEvent): unknown {
  const all: AnyEvent = ev;
  void all;
  // an unknown event's members are unknown, not any
  // @ts-expect-error: unknown has no members without a check
  void ev.dropped.toFixed;
  return ev.dropped;
}

export function uiRequest(req: AnyUiRequest): string {
  if (!isKnownUiRequest(req)) return req.method;
  switch (req.method) {
    case 'confirm':
      return `${req.title}: ${req.message} (${req.timeout ?? 'no'} timeout)`;
    case 'setStatus':
      // @ts-expect-error: setStatus has no title
      return req.title;
    default:
      return req.id;
  }
}

export async function commands(client: Client): Promise<void> {
  const state: SessionState = await client.getState();
  const streaming: boolean = state.isStreaming;
  // @ts-expect-error: SessionState has no such member
  void state.noSuchMember;
  const loose = await client.getState<{ anything: number }>({ timeoutMs: 1000 });
  const models: GetAvailableModelsResult = await client.getAvailableModels();
  const cycled: CycleModelResult | null = await client.cycleModel({ timeoutMs: null });
  const opts: CompactOptions = { customInstructions: 'keep it short', timeoutMs: 5000 };
  await client.compact(opts);
  await client.compact();
  const forked = await client.fork('entry-1');
  await client.setSteeringMode('one-at-a-time');
  // @ts-expect-error: not a steering mode
  await client.setSteeringMode('sometimes');
  // @ts-expect-error: fork needs the entry id
  await client.fork();
  // @ts-expect-error: compact's options do not take an unknown param
  await client.compact({ customInstruction: 'typo' });
  const done: void = await client.setAutoRetry(false);
  const page = await client.getMessagesPage({ cursor: 'c', limit: 10 });
  void [streaming, loose.anything, models.models.length, cycled?.isScoped, forked.cancelled, done, page.totalMessages, EVENT_TYPES.length];
  client.on('agent_end', (ev) => void ev.messages);
  client.on('host_tool_call', (ev) => void ev.arguments);
  // @ts-expect-error: a notice has no messages
  client.once('notice', (ev) => void ev.messages);
  client.on('some_future_event', (ev) => void ev.anything);
}
