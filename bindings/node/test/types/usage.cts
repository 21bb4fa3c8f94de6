// Type-checked (tsc --noEmit), never run: the CommonJS declarations.
import omprpc = require('omprpc');
import { Client, TimeoutError } from 'omprpc';

export async function main(fake: string): Promise<number> {
  const client: Client = await omprpc.Client.start({ command: [fake] });
  try {
    const ev = await client.nextEvent({ timeoutMs: 0 });
    return ev.type.length;
  } catch (e) {
    if (e instanceof TimeoutError) return 0;
    throw e;
  } finally {
    await client.close();
  }
}
