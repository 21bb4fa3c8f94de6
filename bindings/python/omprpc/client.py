"""``RpcClient``: the ``omp_rpc`` client API over the omprpc C ABI.

Threads per started client:

* the caller's threads, each blocking inside the library (the GIL is released) for requests,
  prompts and waits;
* one **dispatcher** thread (``omprpc-dispatch``) that polls the library's event queue in
  batches and runs every listener, in order; it never writes to the agent except for host
  replies it hands to the workers;
* a bounded pool of **host workers** (``omprpc-host``, ``max_host_workers``, default 8) that run
  host tools and host URI handlers.

The protocol itself (framing, correlation, turn assembly, argv, UI policy, host call checks)
lives in the library; this module converts JSON to Python objects.

Where the rest lives (private modules of this package): ``_session`` (one started client: the
handle, the dispatcher thread, teardown), ``_host`` (the host worker pool, host tools, host
URIs, the policy gate), ``_events`` (listeners), ``_turn`` (PromptTurn), ``_todos`` (set_todos'
input), ``_common`` (helpers, LIBRARY_DEFAULT). RpcClient's methods are grouped by kind in
mixins: listeners (``_events``), UI (``_ui``), host registrations (``_host``), the typed
commands (``_commands``), prompts and turns (``_prompts``), and last the commands generated from
src/protocol/table.json that no hand-written method covers (``_protocol_gen``). This module
keeps RpcClient's construction, lifecycle and state, and every name that was importable from
it before the split.
"""

from __future__ import annotations

import json
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence, TypeVar

from ._commands import _Commands
from ._events import _EventListeners
from ._host import _HostRegistration
from ._prompts import _Prompts
from ._protocol_gen import _GeneratedCommands
from ._ui import _Ui

# Names defined in this module before the split, imported back from their new homes (the
# "as" form marks them as re-exported for type checkers).
from ._common import LIBRARY_DEFAULT as LIBRARY_DEFAULT
from ._common import _LOG_LEVELS as _LOG_LEVELS
from ._common import _interruptible as _interruptible
from ._common import _LibraryDefault as _LibraryDefault
from ._common import _loads as _loads
from ._common import _loads_bulk as _loads_bulk
from ._common import _ms as _ms
from ._common import _request_ms as _request_ms
from ._common import _typed_bulk as _typed_bulk
from ._events import _ERROR_HISTORY_LIMIT as _ERROR_HISTORY_LIMIT
from ._events import AgentEventListener as AgentEventListener
from ._events import EventOverflowListener as EventOverflowListener
from ._events import ExtensionErrorListener as ExtensionErrorListener
from ._events import ListenerErrorEvent as ListenerErrorEvent
from ._events import ListenerErrorListener as ListenerErrorListener
from ._events import NotificationListener as NotificationListener
from ._events import PolicyEvalListener as PolicyEvalListener
from ._events import PolicyHandler as PolicyHandler
from ._events import PolicyVerdictValue as PolicyVerdictValue
from ._events import ProtocolErrorListener as ProtocolErrorListener
from ._events import ReadyListener as ReadyListener
from ._events import TListener as TListener
from ._events import ToolBlockedListener as ToolBlockedListener
from ._events import UiRequestListener as UiRequestListener
from ._events import UnknownNotificationListener as UnknownNotificationListener
from ._events import _Entry as _Entry
from ._events import _Listeners as _Listeners
from ._host import _WorkerPool as _WorkerPool
from ._session import _BATCH_MAX_EVENTS as _BATCH_MAX_EVENTS
from ._session import _Session as _Session
from ._todos import TodoPhaseSeed as TodoPhaseSeed
from ._todos import TodoSeed as TodoSeed
from ._todos import _normalize_todo_phases as _normalize_todo_phases
from ._turn import PromptTurn as PromptTurn
from ._turn import TurnOutcome as TurnOutcome
from ._turn import _event_payload as _event_payload
from ._turn import _PromptLifecycle as _PromptLifecycle

# This module's imports from the package before the split, kept whole: what they bind stays
# importable from here (e.g. ``from omprpc.client import RpcCommandError``); some are used here.
from . import _ffi, _lazy
from ._ffi import lib
from .errors import (
    RpcCommandError,
    RpcError,
    RpcProcessExitError,
    RpcProtocolError,
    RpcTimeoutError,
    not_running_error,
)
from .host_tools import HostTool, HostToolContext, normalize_result
from .helpers import prompt_from_content
from .host_uris import HostUri, HostUriContext, normalize_read_result
from .protocol import (
    AGENT_EVENT_TYPES,
    TODO_STATUSES,
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    AssistantMessage,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BashResult,
    BranchMessage,
    BranchResult,
    CancellationResult,
    CompactionResult,
    EventOverflow,
    ExtensionError,
    ExtensionUiRequest,
    FastModeResult,
    ImageContent,
    InterruptMode,
    JsonObject,
    JsonValue,
    MessageEndEvent,
    MessagesPage,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelCycleResult,
    ModelInfo,
    PolicyEvalEvent,
    ReadyEvent,
    RetryFallbackAppliedEvent,
    RetryFallbackSucceededEvent,
    RpcAgentEvent,
    RpcNotification,
    SessionState,
    SessionStats,
    SteeringMode,
    StreamingBehavior,
    ThinkingLevel,
    ThinkingLevelCycleResult,
    TodoAutoClearEvent,
    TodoItem,
    TodoPhase,
    TodoReminderEvent,
    ToolBlockedEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TtsrTriggeredEvent,
    TurnEndEvent,
    TurnStartEvent,
    UnknownNotification,
    parse_agent_messages,
    parse_bash_result,
    parse_branch_messages,
    parse_branch_result,
    parse_cancellation_result,
    parse_compaction_result,
    parse_extension_ui_request,
    parse_fast_mode_result,
    parse_model_cycle_result,
    parse_model_info,
    parse_session_state,
    parse_session_stats,
    parse_thinking_level_cycle_result,
    parse_todo_phases,
    to_notification,
)
from .stream import DEFAULT_SETTLE_TIMEOUT, TurnStream, concurrency_error
from .summary import TurnSummary, parse_turn_summary

__all__ = [
    "RpcClient",
    "PromptTurn",
    "TurnOutcome",
    "ListenerErrorEvent",
    "AgentEventListener",
    "NotificationListener",
    "UiRequestListener",
    "ExtensionErrorListener",
    "ReadyListener",
    "UnknownNotificationListener",
    "ProtocolErrorListener",
    "ListenerErrorListener",
    "PolicyEvalListener",
    "ToolBlockedListener",
    "PolicyHandler",
    "PolicyVerdictValue",
]

_T = TypeVar("_T")

_TURN_EVENTS = ("all", "no_updates", "none")
_BRIDGE_MODES = ("auto", "always", "never")
_BRIDGE_TRANSPORTS = ("unix", "tcp")


class RpcClient(_EventListeners, _Ui, _HostRegistration, _Commands, _Prompts, _GeneratedCommands):
    """A client for ``omp --mode rpc`` (and ``pi --mode rpc``), API-compatible with
    ``omp_rpc.RpcClient``. Use ``with RpcClient(...) as client:`` or start()/stop().

    Options beyond ``omp_rpc``'s: ``flavor`` ("omp"/"pi"/"auto"), ``system_prompt``,
    ``extensions``, ``turn_timeout`` (seconds; default for prompt_and_wait / collect_events /
    wait_for_idle when their ``timeout`` is None; None = no deadline), ``max_host_workers``,
    ``listener_sync_timeout`` (seconds a lifecycle call waits for listeners to catch up; 0 = do
    not wait), ``stop_join_timeout`` and ``core_options`` (extra start options for the
    library, e.g. ``{"stop_grace_ms": 500, "event_queue_capacity": 100000}``; they override
    the keywords).

    The library's start options, as keywords (docs/c-api.md has the details):

    * environment: ``inherit_env`` (True: all of this process's environment, the default as in
      ``omp_rpc``; False: only ``env``; ``"allowlist"``: only the names an agent needs, see
      :func:`omprpc.env_allowlisted`), ``env_passthrough`` (exact names copied from this
      process's environment, e.g. one API key), ``system_prompt_via_file`` (system prompts go
      to the agent as files in a private directory, not in its argv);
    * turns: ``turn_idle_timeout`` (seconds without any event before a waiting turn fails with
      RpcTimeoutError), ``turn_events`` ("all", "no_updates": no ``message_update`` in the
      turn, "none"), ``max_turn_bytes`` / ``event_queue_max_bytes`` (None: no limit),
      ``turn_summary`` (every turn gets a :attr:`PromptTurn.summary`);
    * the tool bridge (pi's host tools, the policy gate): ``bridge`` ("auto": on pi,
      "always", "never"), ``bridge_transport`` ("unix", "tcp"), ``host_tool_timeout``
      (seconds before the bridge fails a host tool call); for an agent in another network
      namespace, container or host, ``bridge_listen`` ("IP:port" the bridge binds, TCP) and
      ``bridge_advertise`` ("host:port" the extension dials; port 0: the bound one) — the
      ``bridgeEndpoint`` of :meth:`info` says where it ended up. With ``flavor="pi"``, ``custom_tools``
      are served through the bridge: their calls reach the tools exactly as on omp;
    * the policy gate over the agent's own tools: ``tool_policy`` (``{"mode": "host"}``: each
      tool call is a :class:`PolicyEvalEvent` to answer with :meth:`policy_verdict`;
      ``{"mode": "rules", "allow": [...], "block": {name: reason}, "default": "block"}``:
      decided in the library; ``timeout_ms``, ``fail_open``) and ``policy_handler`` (a callable
      run on the host worker pool that answers each question: it returns True / False or
      ``(allow, reason)``; raising blocks the tool. With a handler and no ``tool_policy`` the
      gate is ``{"mode": "host"}``);
    * observability: ``log_level`` ("error" … "trace"; default off) makes the library keep
      log records (spawn with a redacted argv, handshake, requests with latency — never
      params, prompts, system prompts or env values —, protocol errors, teardown), which a
      thread forwards to the ``logging`` logger ``omprpc`` (children ``omprpc.spawn``,
      ``omprpc.request``, …; the record's fields in ``extra={"omprpc": …}``); with
      ``forward_logs=False`` take them with :meth:`next_logs` instead. :meth:`counters`
      reads the per-client counters. ``OMPRPC_LOG=debug`` in the environment prints records
      to stderr whatever the options;
    * skills and tool schemas: ``skills`` ("all", "none", or a list: names for omp, paths
      for pi from 0.50; see :func:`omprpc.skills_flags`; ``read`` joins a
      ``tools`` allow-list when skills load) and ``sanitize_tool_schemas`` (the
      ``custom_tools``' parameter schemas through :func:`omprpc.sanitize_schema`);
    * what the agent loads and reaches beyond what the host names (docs/agents.md, "Options
      that mean what they say"): ``trust_project`` (default off on pi: the repository's
      ``.pi/extensions``, ``.pi/settings.json``, ``.pi/mcp.json`` … stay out — pi 0.79 on gets
      ``--no-approve``, older pi has discovery switched off; True loads them; on omp unset
      leaves its discovery, False passes ``--no-extensions``), ``mcp`` (default off: pi 1.0.4
      on gets ``--no-mcp``, no MCP server starts; with it on, a ``tools`` allow-list still
      decides which MCP tools are reachable), ``context_files`` (False: no ``AGENTS.md``) and
      ``exclude_tools``. What the running version cannot honour fails start with a
      :class:`RpcError` naming the version;
    * recording: ``record_path`` writes every frame of the session, both directions, with
      timestamps, to a JSONL file (created 0600: it holds prompts and tool output), which
      ``omprpc-fake-agent --replay FILE`` plays back as a regression test;
    * sandboxes and other hosts: ``launcher`` (an argv prefix the agent runs behind, e.g.
      ``["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--"]``, ``["ssh", "-T", "host"]``,
      ``["docker", "exec", "-i", "ctr"]``), ``launcher_env`` ("auto", "process": the launcher
      hands its environment on; "command": ``env`` and ``cwd`` travel as an ``env -C DIR
      NAME=VALUE …`` prefix, the default for ssh/docker/podman/kubectl/sudo) and
      ``launcher_shell`` (quote each word for the far side's shell; default on for ssh). What
      close means through each: docs/launcher.md.
    """

    #: Whether start() runs the dispatcher thread that reads the event queue; ``omprpc.aio``'s
    #: core turns it off and reads the queue on its event loop instead.
    _dispatches_events: ClassVar[bool] = True

    def __init__(
        self,
        *,
        command: Sequence[str] | None = None,
        executable: str = "omp",
        provider: str | None = None,
        model: str | None = None,
        session_dir: str | Path | None = None,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        user: int | str | None = None,
        group: int | str | None = None,
        extra_groups: Sequence[int | str] | None = None,
        thinking: ThinkingLevel | None = None,
        append_system_prompt: str | None = None,
        provider_session_id: str | None = None,
        tools: Sequence[str] | None = None,
        custom_tools: Sequence[HostTool[Any, Any]] | None = None,
        host_uris: Sequence[HostUri[Any]] | None = None,
        no_session: bool = False,
        no_skills: bool = False,
        no_rules: bool = False,
        no_title: bool | None = None,
        rpc_defaults: bool = True,
        extra_args: Sequence[str] = (),
        startup_timeout: float | None = 30.0,
        request_timeout: float | None = 30.0,
        max_event_history: int | None = 10_000,
        max_stderr_chunks: int | None = 512,
        flavor: str | None = None,
        system_prompt: str | None = None,
        extensions: Sequence[str] | None = None,
        turn_timeout: float | None = None,
        max_host_workers: int = 8,
        listener_sync_timeout: float = 5.0,
        stop_join_timeout: float = 30.0,
        core_options: Mapping[str, Any] | None = None,
        inherit_env: bool | Literal["allowlist"] = True,
        env_passthrough: Sequence[str] = (),
        system_prompt_via_file: bool = False,
        turn_idle_timeout: float | None = None,
        turn_events: Literal["all", "no_updates", "none"] | None = None,
        max_turn_bytes: int | None = LIBRARY_DEFAULT,
        event_queue_max_bytes: int | None = LIBRARY_DEFAULT,
        turn_summary: bool = False,
        bridge: Literal["auto", "always", "never"] | None = None,
        bridge_transport: Literal["unix", "tcp"] | None = None,
        bridge_listen: str | None = None,
        bridge_advertise: str | None = None,
        host_tool_timeout: float | None = None,
        tool_policy: Mapping[str, Any] | None = None,
        policy_handler: PolicyHandler | None = None,
        log_level: Literal["error", "warn", "info", "debug", "trace"] | None = None,
        forward_logs: bool = True,
        record_path: str | Path | None = None,
        launcher: Sequence[str] | None = None,
        launcher_env: Literal["auto", "process", "command"] | None = None,
        launcher_shell: bool | None = None,
        skills: Literal["all", "none"] | Sequence[str] | None = None,
        sanitize_tool_schemas: bool = False,
        trust_project: bool | None = None,
        mcp: bool | None = None,
        context_files: bool | None = None,
        exclude_tools: Sequence[str] | None = None,
    ) -> None:
        if user is not None or group is not None or extra_groups is not None:
            raise NotImplementedError(
                "omprpc does not switch user/group for the agent process; run the host under "
                "the wanted account instead (user, group and extra_groups must be None)"
            )
        self._command = tuple(command) if command is not None else None
        self._executable = executable
        self._provider = provider
        self._model = model
        self._session_dir = Path(session_dir) if session_dir is not None else None
        self._cwd = Path(cwd) if cwd is not None else None
        self._env = {str(k): str(v) for k, v in (env or {}).items()}
        self._thinking = thinking
        self._append_system_prompt = append_system_prompt
        self._provider_session_id = provider_session_id
        self._tools = tuple(tools) if tools is not None else None
        self._custom_tools: tuple[HostTool[Any, Any], ...] = tuple(custom_tools or ())
        self._host_uris: tuple[HostUri[Any], ...] = tuple(host_uris or ())
        self._no_session = no_session
        self._no_skills = no_skills
        self._no_rules = no_rules
        self._no_title = no_title
        self._rpc_defaults = rpc_defaults
        self._extra_args = tuple(extra_args)
        self._startup_timeout = startup_timeout
        self._request_timeout = request_timeout
        self._max_event_history = self._validate_history_limit("max_event_history", max_event_history)
        self._max_stderr_chunks = self._validate_history_limit("max_stderr_chunks", max_stderr_chunks)
        self._flavor = flavor
        self._system_prompt = system_prompt
        self._extensions = tuple(extensions) if extensions is not None else None
        self._turn_timeout = turn_timeout
        self._max_host_workers = max_host_workers
        self._listener_sync_timeout = listener_sync_timeout
        self._stop_join_timeout = stop_join_timeout
        self._core_options = dict(core_options or {})
        # The embedder helpers as start options (omprpc.skills_flags, omprpc.sanitize_schema).
        if skills is not None and not isinstance(skills, str):
            skills = [str(name) for name in skills]
        self._skills = skills
        self._trust_project = trust_project
        self._mcp = mcp
        self._context_files = context_files
        self._exclude_tools = [str(name) for name in exclude_tools] if exclude_tools is not None else None
        self._sanitize_tool_schemas = bool(sanitize_tool_schemas)
        if inherit_env not in (True, False, "allowlist"):
            raise ValueError('inherit_env must be True, False or "allowlist"')
        self._inherit_env = inherit_env
        if isinstance(env_passthrough, (str, bytes)):
            raise TypeError("env_passthrough must be a sequence of names, not a string")
        self._env_passthrough = tuple(str(n) for n in env_passthrough)
        self._system_prompt_via_file = bool(system_prompt_via_file)
        self._turn_idle_timeout = turn_idle_timeout
        if turn_events is not None and turn_events not in _TURN_EVENTS:
            raise ValueError(f"turn_events must be one of {_TURN_EVENTS}")
        self._turn_events = turn_events
        self._max_turn_bytes = max_turn_bytes if max_turn_bytes is LIBRARY_DEFAULT else \
            self._validate_history_limit("max_turn_bytes", max_turn_bytes)
        self._event_queue_max_bytes = event_queue_max_bytes if event_queue_max_bytes is LIBRARY_DEFAULT else \
            self._validate_history_limit("event_queue_max_bytes", event_queue_max_bytes)
        self._turn_summary = bool(turn_summary)
        if bridge is not None and bridge not in _BRIDGE_MODES:
            raise ValueError(f"bridge must be one of {_BRIDGE_MODES}")
        self._bridge = bridge
        if bridge_transport is not None and bridge_transport not in _BRIDGE_TRANSPORTS:
            raise ValueError(f"bridge_transport must be one of {_BRIDGE_TRANSPORTS}")
        self._bridge_transport = bridge_transport
        self._bridge_listen = bridge_listen
        self._bridge_advertise = bridge_advertise
        self._host_tool_timeout = host_tool_timeout
        if log_level is not None and log_level not in _LOG_LEVELS:
            raise ValueError(f"log_level must be one of {tuple(_LOG_LEVELS)} or None")
        self._log_level = log_level
        self._forward_logs = bool(forward_logs)
        self._record_path = Path(record_path) if record_path is not None else None
        if isinstance(launcher, (str, bytes)):
            raise TypeError("launcher must be a sequence of argv words, not a string")
        self._launcher = [str(w) for w in launcher] if launcher is not None else None
        self._launcher_env = launcher_env
        self._launcher_shell = launcher_shell
        self._counters: dict[str, Any] = {}
        self._logs: list[dict[str, Any]] = []
        if policy_handler is not None and not callable(policy_handler):
            raise TypeError("policy_handler must be callable")
        if tool_policy is not None:
            if not isinstance(tool_policy, Mapping):
                raise TypeError("tool_policy must be a mapping")
            if policy_handler is not None and tool_policy.get("mode", "host") != "host":
                raise ValueError('a policy_handler needs tool_policy mode "host" (rules are decided in the library)')
        self._tool_policy = dict(tool_policy) if tool_policy is not None else None
        self._policy_handler = policy_handler

        self._listeners = _Listeners()
        me = weakref.ref(self)  # no cycle: dropping the client still stops its agent at once

        def frame_tap(on: bool) -> None:
            client = me()
            if client is not None:
                client._frame_tap(on)

        self._listeners.frame_tap = frame_tap
        self._headless: list[tuple[object, JsonObject]] = []
        self._session: _Session | None = None
        self._stopped = False  # stop() ended a session: a call now is CLOSED, not "not started"
        self._finalizer: weakref.finalize[Any, Any] | None = None  # type: ignore[type-arg,unused-ignore]
        self._lifecycle_lock = threading.RLock()
        self._stderr_text = ""
        self._protocol_errors: tuple[RpcProtocolError, ...] = ()
        self._prompt_lifecycle = _PromptLifecycle(self)
        #: Whether a TurnStream holds this client (see stream(); one at a time).
        self._stream_open = False
        self._stream_lock = threading.Lock()

    # -- a turn as it happens --

    def stream(
        self,
        message: str = "",
        *,
        images: Sequence[ImageContent] | None = None,
        content: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = None,
        settle_timeout: float | None = DEFAULT_SETTLE_TIMEOUT,
    ) -> TurnStream:
        """Prompts; returns the turn as a :class:`omprpc.stream.TurnStream` to iterate in a
        ``with`` block: :class:`~omprpc.stream.TextChunk`, :class:`~omprpc.stream.ReasoningChunk`,
        :class:`~omprpc.stream.ToolCallRequest`, :class:`~omprpc.stream.ToolCallComplete`,
        :class:`~omprpc.stream.RetryScheduled`, :class:`~omprpc.stream.CompactionComplete`, and
        last :class:`~omprpc.stream.TurnComplete` (the same items as ``omprpc.aio``'s
        ``stream()``); ``final_turn()`` consumes the rest and returns the last. ``timeout``: the
        whole turn's, as for :meth:`prompt_and_wait` (None: the ``turn_timeout`` option); past
        it the iteration raises RpcTimeoutError and, as with prompt_and_wait, the agent's run
        is not aborted (call :meth:`abort`).
        Leaving the ``with`` block before the turn completed sends ``abort`` and waits at most
        ``settle_timeout`` seconds for the agent to finish the aborted turn. One stream at a
        time per client: a second while one is open raises RpcConcurrencyError."""
        with self._stream_lock:
            if self._stream_open:
                raise concurrency_error("finish or close() its stream first (a `with` block closes it)")
            self._stream_open = True
        try:
            return TurnStream(self, message, images=images, content=content, timeout=timeout,
                              settle_timeout=settle_timeout)
        except BaseException:
            self._stream_open = False
            raise

    # -- lifecycle --

    def __enter__(self) -> RpcClient:
        return self.start()

    def __exit__(self, _exc_type: object, _exc: object, _tb: object) -> None:
        self.stop()

    def _argv_options(self) -> JsonObject:
        o: JsonObject = {
            "rpc_defaults": self._rpc_defaults,
            "no_session": self._no_session,
            "no_skills": self._no_skills,
            "no_rules": self._no_rules,
            "extra_args": list(self._extra_args),
        }
        if self._command is not None:
            o["command"] = list(self._command)
        if not (self._flavor == "pi" and self._executable == "omp"):  # pi's default is "pi"
            o["executable"] = self._executable
        for key, value in (
            ("provider", self._provider),
            ("model", self._model),
            ("session_dir", str(self._session_dir) if self._session_dir is not None else None),
            ("thinking", self._thinking),
            ("append_system_prompt", self._append_system_prompt),
            ("provider_session_id", self._provider_session_id),
            ("no_title", self._no_title),
            ("flavor", self._flavor),
            ("system_prompt", self._system_prompt),
            ("trust_project", self._trust_project),
            ("mcp", self._mcp),
            ("context_files", self._context_files),
        ):
            if value is not None:
                o[key] = value
        if self._tools is not None:
            o["tools"] = list(self._tools)
        if self._extensions is not None:
            o["extensions"] = list(self._extensions)
        if self._skills is not None:
            o["skills"] = self._skills
        if self._exclude_tools is not None:
            o["exclude_tools"] = self._exclude_tools
        return o

    def _argv_extra(self) -> JsonObject:
        """Start options that change the argv too (the bridge extension, prompt files)."""
        o: JsonObject = {}
        if self._system_prompt_via_file:
            o["system_prompt_via_file"] = True
        if self._custom_tools:
            o["host_tools"] = [tool.to_wire() for tool in self._custom_tools]
        if self._sanitize_tool_schemas:
            o["sanitize_tool_schemas"] = True
        if self._bridge is not None:
            o["bridge"] = self._bridge
        if self._bridge_transport is not None:
            o["bridge_transport"] = self._bridge_transport
        if self._bridge_listen is not None:
            o["bridge_listen"] = self._bridge_listen
        if self._bridge_advertise is not None:
            o["bridge_advertise"] = self._bridge_advertise
        if self._host_tool_timeout is not None:
            o["host_tool_timeout_ms"] = _ms(self._host_tool_timeout)
        policy = self._tool_policy
        if policy is None and self._policy_handler is not None:
            policy = {"mode": "host"}
        if policy is not None:
            o["tool_policy"] = policy
        for key, value in (("launcher", self._launcher), ("launcher_env", self._launcher_env),
                           ("launcher_shell", self._launcher_shell)):
            if value is not None:
                o[key] = value
        return o

    def _start_options(self) -> JsonObject:
        o = self._argv_options()
        o.update(self._argv_extra())
        o["inherit_env"] = self._inherit_env
        if self._env_passthrough:
            o["env_passthrough"] = list(self._env_passthrough)
        if self._env:
            o["env"] = dict(self._env)
        if self._cwd is not None:
            o["cwd"] = str(self._cwd)
        # Responses reach the event queue too while an on_frame listener is registered (switched
        # at run time: _frame_tap); else each would wake the dispatcher, to be dropped.
        # (An older library without the switch taps always.)
        o["queue_responses"] = self._listeners.frames_wanted() if _ffi.has("omprpc_client_set_queue_responses") else True
        o["startup_timeout_ms"] = _ms(self._startup_timeout)
        o["request_timeout_ms"] = _ms(self._request_timeout)
        o["turn_timeout_ms"] = _ms(self._turn_timeout)
        o["max_event_history"] = self._max_event_history
        o["max_stderr_lines"] = self._max_stderr_chunks
        if self._turn_idle_timeout is not None:
            o["turn_idle_timeout_ms"] = _ms(self._turn_idle_timeout)
        if self._turn_events is not None:
            o["turn_events"] = self._turn_events
        if self._max_turn_bytes is not LIBRARY_DEFAULT:
            o["max_turn_bytes"] = self._max_turn_bytes
        if self._event_queue_max_bytes is not LIBRARY_DEFAULT:
            o["event_queue_max_bytes"] = self._event_queue_max_bytes
        if self._turn_summary:
            o["turn_summary"] = True
        if self._host_uris:
            o["host_uri_schemes"] = [uri.to_wire() for uri in self._host_uris]
        if self._headless:
            o["ui_policy"] = self._headless[-1][1]
        if self._log_level is not None:
            o["log_level"] = self._log_level
        if self._record_path is not None:
            o["record_path"] = str(self._record_path)
        o.update(self._core_options)
        return o

    def start(self) -> RpcClient:
        """Spawns the agent, waits for it, negotiates protocol v2 when offered and registers
        host tools / URIs. On any failure nothing is left running."""
        with self._lifecycle_lock:
            if self._session is not None:
                raise RpcError("RPC client is already started")
            with self._listeners._lock:
                self._listeners.errors.clear()
            self._stderr_text = ""
            self._protocol_errors = ()
            ptr = _ffi.start(_ffi.dumps(self._start_options()))
            try:
                session = _Session(ptr, self._listeners, self._custom_tools, self._host_uris,
                                   self._max_host_workers, self._listener_sync_timeout,
                                   self._stop_join_timeout, self._policy_handler)
            except BaseException:
                handle = _ffi.Handle(ptr)
                handle.close()
                handle.free()
                raise
            self._session = session
            self._stopped = False
            self._finalizer = weakref.finalize(self, _Session.shutdown, session)
            # A frame listener added or removed since the start options were built.
            self._listeners.frames_wanted(self._frame_tap)
            session.start(dispatch=self._dispatches_events)
            if self._log_level is not None and self._forward_logs:
                session.forward_logs()
            # Which tools the bridge serves is the library's decision (info's bridgedTools).
            session.bridged_tools = bool(session.info().get("bridgedTools"))
        # as with omp_rpc, ready (and whatever came before it) has reached the listeners
        session.settle()
        return self

    def stop(self) -> None:
        """Stops the agent (stdin EOF, grace, SIGTERM, SIGKILL to its process group). Every
        blocked call returns at once with RpcProcessExitError; listeners have seen every
        event the agent sent when stop() returns. Idempotent, callable from any thread."""
        with self._lifecycle_lock:
            session = self._session
            if session is None:
                return
            self._session = None
            self._stopped = True
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer.detach()
        session.shutdown()
        self._stderr_text = session.stderr_cache
        self._protocol_errors = session.protocol_errors_cache
        self._counters = session.counters_cache
        self._logs = session.logs_cache

    def _frame_tap(self, on: bool) -> None:
        """Switches the library's raw-frame tap (the start option queue_responses)."""
        session = self._session
        if session is not None and _ffi.has("omprpc_client_set_queue_responses"):
            try:
                session.handle.call(lib.omprpc_client_set_queue_responses, on)
            except RpcError:
                pass  # stopped: nothing to tap any more

    def _require(self) -> _Session:
        session = self._session
        if session is None:
            raise not_running_error(self._stopped)
        return session

    @staticmethod
    def _synced(session: _Session, call: Callable[[], _T]) -> _T:
        """Runs a call that waits on the agent, then (returned or raised an RpcError) waits for
        the dispatcher to have run the listeners for every event queued before its outcome."""
        try:
            result = call()
        except RpcError:
            session.settle()
            raise
        session.settle()
        return result

    # -- read-only state --

    @property
    def stderr(self) -> str:
        """The agent's last ``max_stderr_chunks`` stderr lines (kept after stop())."""
        session = self._session
        if session is None:
            return self._stderr_text
        return session.stderr()

    @property
    def command(self) -> tuple[str, ...]:
        """The argv start() spawns (built by the library; nothing is started). With the tool
        bridge (pi's host tools, a policy gate) the path of its ``--extension``, which exists
        only once started, reads ``"\\x00omprpc-bridge-extension"`` (``info()["argv"]`` has
        the real one)."""
        options = self._argv_options()
        options.update(self._argv_extra())
        return tuple(json.loads(_ffi.build_argv(_ffi.dumps(options))))

    @property
    def protocol_errors(self) -> tuple[RpcProtocolError, ...]:
        session = self._session
        if session is None:
            return self._protocol_errors
        try:
            return session.protocol_errors()
        except RpcProcessExitError:
            return session.protocol_errors_cache

    def counters(self) -> dict[str, Any]:
        """The library's per-client counters (frames and bytes in and out, requests sent and
        pending, events queued / delivered / dropped, time to first event, …; docs/c-api.md).
        After stop(), the last values read (at stop)."""
        session = self._session
        if session is None:
            return dict(self._counters)
        try:
            return session.counters()
        except RpcProcessExitError:
            return dict(session.counters_cache)

    def next_logs(self, max_records: int = 256, timeout: float | None = 0.0) -> list[dict[str, Any]]:
        """Takes up to ``max_records`` log records (dicts: level, target, message, t_ms, …),
        waiting up to ``timeout`` seconds (None: until one arrives or the client stops) for
        the first; [] when none arrived. For clients started with ``log_level`` and
        ``forward_logs=False`` (otherwise the records go to the ``omprpc`` logger). After
        stop(), the records left then (teardown's), then []."""
        session = self._session
        if session is None:
            taken, self._logs = self._logs[:max(1, max_records)], self._logs[max(1, max_records):]
            return taken
        if self._forward_logs and session.log_thread is not None:
            raise RpcError("log records are forwarded to the 'omprpc' logger (forward_logs=True)")
        try:
            return session.next_logs(max_records, -1 if timeout is None else _ms(timeout))
        except RpcTimeoutError:
            return []

    @property
    def listener_errors(self) -> tuple[ListenerErrorEvent, ...]:
        with self._listeners._lock:
            return tuple(self._listeners.errors)

    @property
    def is_running(self) -> bool:
        return self._session is not None

    def info(self) -> dict[str, Any]:
        """The library's view: pid, argv (system prompts redacted), flavor, protocolVersion,
        ready frame, closed / closeReason, activeOperation, pendingRequests."""
        return self._require().info()


    # -- requests --

    def _request_data(self, command_type: str, payload: Mapping[str, Any] | None = None, *,
                      _timeout: float | None = LIBRARY_DEFAULT) -> Any:
        session = self._require()
        params = {k: v for k, v in (payload or {}).items() if v is not None}
        ctype = _ffi.encode(command_type, "command type")
        encoded = _ffi.dumps(params) if params else None
        ms = _request_ms(_timeout)
        data = self._synced(session, lambda: session.handle.call_out(lib.omprpc_client_request, ctype, encoded, ms))
        return _loads(data)

    def _request(self, command_type: str, _timeout: float | None = LIBRARY_DEFAULT, **payload: Any) -> JsonObject:
        data = self._request_data(command_type, payload, _timeout=_timeout)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise RpcError("RPC response payload must be an object")
        return data

    def request_raw(self, command_type: str, **payload: JsonValue) -> JsonObject:
        """Any command; keyword arguments that are None are left out. Returns ``data``."""
        return self._request(command_type, **payload)

    def _listed(self, command: str, key: str, timeout: float | None) -> tuple[JsonObject, ...]:
        items = self._request(command, _timeout=timeout).get(key)
        if not isinstance(items, list):
            raise RpcError(f"{command} response did not include {key}")
        return tuple(dict(item) for item in items if isinstance(item, dict))

    @staticmethod
    def _validate_history_limit(name: str, limit: int | None) -> int | None:
        if limit is None:
            return None
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"{name} must be an int or None")
        if limit <= 0:
            raise ValueError(f"{name} must be greater than zero")
        return limit
