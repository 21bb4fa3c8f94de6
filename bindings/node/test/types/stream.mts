// The stream, cancellation and StartOptions declarations, type-checked (tsc --strict --noEmit,
// test/types.test.mjs): a switch over StreamItem narrows each kind, finalTurn() is typed,
// AbortError carries its cause, StartOptions takes one camelCase key per option.
import { AbortError, Client, RpcTimeoutError, type StartOptions, type StreamItem, type TurnComplete } from '../../index.mjs';

export async function streamUsage(client: Client): Promise<number> {
  const ac = new AbortController();
  const stream = client.stream('hello', { signal: ac.signal, timeoutMs: 1000 });
  let chars = 0;
  for await (const item of stream) {
    const it: StreamItem = item;
    switch (it.kind) {
      case 'text':
      case 'reasoning':
        chars += it.text.length;
        break;
      case 'tool_start':
        chars += it.toolName.length + it.toolCallId.length;
        break;
      case 'tool_end':
        if (it.outcome === 'blocked' && it.reason !== null) chars += it.reason.length;
        break;
      case 'retry':
        chars += it.delayMs ?? 0;
        break;
      case 'compaction':
        chars += it.willRetry ? 1 : 0;
        break;
      case 'turn_complete':
        chars += (it.usage?.inputTokens ?? 0) + (it.text ?? '').length + it.attempts;
        break;
      default: {
        const never: never = it;
        return never;
      }
    }
  }
  const done: TurnComplete = await stream.finalTurn();
  await stream.close();
  await using again = client.stream('again');
  void again;
  return chars + done.summary.text.length;
}

export async function cancelUsage(client: Client): Promise<string> {
  try {
    await client.getState({ signal: AbortSignal.timeout(10) });
    await client.promptAndWait('x', { signal: AbortSignal.abort() });
    await Client.start({ command: ['agent'], signal: AbortSignal.timeout(1000) });
  } catch (e) {
    if (e instanceof AbortError) return `${e.name} ${String(e.cause)} ${e.code}`;
    if (e instanceof RpcTimeoutError) return e.code;
  }
  return '';
}

export const options: StartOptions = { command: ['agent'], maxEventHistory: null, turnTimeoutMs: 1000, queueResponses: true };
// @ts-expect-error one spelling per option: the snake_case key is not an option
export const snake: StartOptions = { command: ['agent'], max_event_history: null };
// @ts-expect-error no index signature: a typo is not an option
export const typo: StartOptions = { comand: ['agent'] };
