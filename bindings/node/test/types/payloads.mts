// Type-checked (tsc --strict --noEmit), never run: the typed payloads of protocol.gen.d.ts
// (issue 23 §3). Each `@ts-expect-error` line must fail to compile (tsc reports an unused
// one): were a payload type to regress to `any`, these would compile and the check fails.
import {
  Client, assistantTextDelta, isKnownAssistantMessageEvent, isKnownMessageContent, isKnownAgentMessage,
  type AgentMessage, type AgentToolResult, type AssistantMessageEvent, type MessageContent, type Usage,
  type UnknownAssistantMessageEvent, type Turn,
} from 'omprpc';

/** A switch over the assistant message events: only text deltas are answer text. */
export function answerText(ev: AssistantMessageEvent): string {
  if (!isKnownAssistantMessageEvent(ev)) {
    const unknown: UnknownAssistantMessageEvent = ev;
    return `(a newer agent's ${unknown.type})`;
  }
  switch (ev.type) {
    case 'text_delta': {
      const delta: string = ev.delta;
      const index: number = ev.contentIndex;
      void index;
      return delta;
    }
    case 'thinking_delta':
    case 'toolcall_delta':
      return ''; // reasoning and tool-argument JSON are not answer text
    case 'toolcall_end': {
      const args: Record<string, unknown> = ev.toolCall.arguments;
      void args;
      return '';
    }
    case 'done':
      return ev.message.stopReason;
    case 'error':
      return ev.error.errorMessage ?? '';
    default:
      return '';
  }
}

export function notAny(ev: AssistantMessageEvent): void {
  // @ts-expect-error: `delta` is a text_delta's (or thinking/toolcall delta's), not every event's
  void ev.delta;
  // @ts-expect-error: the helper returns string | undefined, not a string
  const s: string = assistantTextDelta(ev);
  void s;
}

/** The text of a tool result's content blocks. */
export function toolText(result: AgentToolResult): string {
  return result.content.map((b: MessageContent) => (isKnownMessageContent(b) && b.type === 'text' ? b.text : '')).join('');
}

export function blockKinds(b: MessageContent): string {
  if (!isKnownMessageContent(b)) return b.type;
  switch (b.type) {
    case 'text': return b.text;
    case 'thinking': return b.thinking;
    case 'image': return b.mimeType;
    case 'toolCall': return b.name;
  }
}

/** Usage fields are numbers, its cost an object of numbers. */
export function usageLine(u: Usage): string {
  const tokens: number = u.input + u.output + u.cacheRead + u.cacheWrite;
  const total: number = u.totalTokens;
  const cost: number = u.cost.total;
  // @ts-expect-error: no such usage field
  void u.inputTokens;
  return `${tokens}/${total} tokens, $${cost}`;
}

export function roles(messages: AgentMessage[]): string[] {
  return messages.map((m) => {
    if (!isKnownAgentMessage(m)) return `? ${m.role}`;
    switch (m.role) {
      case 'assistant': return `assistant ${m.usage.totalTokens}`;
      case 'toolResult': return `tool ${m.toolName} ${m.isError}`;
      case 'user': return typeof m.content === 'string' ? m.content : `${m.content.length} blocks`;
      default: return m.role;
    }
  });
}

/** A turn's messages, assistant message and usage are typed. */
export function turnUsage(turn: Turn): string {
  const usage: Usage | null = turn.usage;
  const last = turn.assistantMessage;
  return `${roles(turn.messages).length} ${last?.model ?? ''} ${usage ? usageLine(usage) : ''}`;
}

/** events({types}) narrows the yielded events to those types' interfaces. */
export async function stream(client: Client): Promise<void> {
  for await (const ev of client.events({ types: ['message_update', 'tool_execution_end'] })) {
    if (ev.type === 'message_update') {
      const delta: string | undefined = assistantTextDelta(ev.assistantMessageEvent);
      if (delta !== undefined) process.stdout.write(delta);
    } else if (ev.type === 'tool_execution_end') {
      const text: string = toolText(ev.result);
      // @ts-expect-error: a tool_execution_end is not a message_update
      void ev.assistantMessageEvent;
      void text;
    } else {
      // the only other item: where the iterator dropped events, and how many
      const dropped: number = ev.dropped;
      void dropped;
    }
  }
  for await (const ev of client.events()) {
    // @ts-expect-error: without `types`, an event's members are unknown until narrowed
    const s: string = ev.toolName;
    void s;
  }
}
