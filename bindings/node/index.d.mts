// Type declarations for the ESM entry point (index.mjs): the same API as index.d.cts.
import * as omprpc from './index.cjs';
export * from './index.cjs';
export default omprpc;
