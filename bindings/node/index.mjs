// ESM entry point: the implementation is the CommonJS module (one copy of the state:
// the loaded library, the exit hook).
import omprpc from './index.cjs';

export const {
  ABI_VERSION,
  TIMEOUT_INFINITE,
  TIMEOUT_DEFAULT,
  POLL_SLICE_MS,
  Status,
  Client,
  EventIterator,
  OmprpcError,
  InvalidArgumentError,
  InvalidJsonError,
  InvalidUtf8Error,
  TimeoutError,
  CommandError,
  ProcessExitedError,
  ClosedError,
  ConcurrencyError,
  ProtocolError,
  IoError,
  NotFoundError,
  CancelledError,
  LimitExceededError,
  PanicError,
  load,
  libraryPath,
  libraryCandidates,
  version,
  abiVersion,
  statusName,
  buildArgv,
  toCoreOptions,
  summarize,
  Summarizer,
  envAllowlisted,
  promptFromContent,
  providerConfig,
} = omprpc;

export default omprpc;
