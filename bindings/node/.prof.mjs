import koffi from 'koffi';
import { Client, load } from './index.mjs';
load('../../target/release/libomprpc.so');
const c = await Client.start({ command: ['../../target/release/omprpc-fake-agent'], maxEventHistory: null });
const lib = koffi.load('../../target/release/libomprpc.so');
const pw = lib.func('int omprpc_client_prompt_and_wait(void *c, const char *m, const char *o, int64_t t, _Out_ void **out, _Out_ void **err)');
const free = lib.func('void omprpc_string_free(void *s)');
const strlen = lib.func('size_t strlen(void *s)');
const h = c._st.h;
for (let i = 0; i < 4; i++) {
  const out = [null], err = [null];
  let t0 = performance.now();
  const st = await new Promise((res) => pw.async(h, 'burst 100000', null, -1, out, err, (e, s) => res(s)));
  let t1 = performance.now();
  const len = Number(strlen(out[0]));
  const s = koffi.decode.string(out[0]);
  let t2 = performance.now();
  const buf = Buffer.from(koffi.view(out[0], len));
  const s2 = buf.toString('latin1'); 
  let t3 = performance.now();
  const v = JSON.parse(s);
  let t4 = performance.now();
  free(out[0]);
  while (await c.nextEvent({timeoutMs:0}).then(()=>true,()=>false));
  console.log({st, len, call: (t1-t0).toFixed(0), decode: (t2-t1).toFixed(0), viewLatin1: (t3-t2).toFixed(0), parse: (t4-t3).toFixed(0), n: v.events.length});
}
await c.close();
