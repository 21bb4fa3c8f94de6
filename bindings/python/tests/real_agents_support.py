"""Test support for the real-agent tests (test_real_agents.py): the real pi / omp offline
against the project's fake LLM, each test in a throw-away workspace.

Environment (set by `make python-tests`, see the Makefile's REAL_AGENT_ENV):

* ``OMPRPC_FAKE_LLM``: the ``omprpc-fake-llm`` binary (``--script FILE --log FILE
  --exit-on-eof``, first stdout line ``LISTENING <port>``);
* ``OMPRPC_PI_CLI``: the newest pi's ``cli.js`` (pi 1.6.0), run by ``OMPRPC_PI_NODE`` (the Node 22
  installed beside it: pi 0.80 on needs Node >= 22.19) when set, else by ``OMPRPC_NODE`` or
  ``node`` on PATH;
* ``OMPRPC_PI_PREVIOUS_CLI``: pi 0.73.1's ``dist/cli.js`` (the newest pi that does not announce
  settling), run by ``OMPRPC_NODE`` or ``node``; the tests that hold both behaviours run on it
  too (``Workspace(..., pi="previous")``);
* ``OMPRPC_OMP_CLI`` and ``OMPRPC_BUN``: omp's ``dist/cli.js``, run as ``bun cli.js``.

Every real agent a module starts is noted (:func:`note_agent`, from the client's ``info()``:
``agentVersion``); the run's summary lists them per module (conftest.py), so the output says
which pi each module ran on.

Unset (a suite run by hand): the tests skip, saying so. Set but broken: they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

import omprpc

#: A hang guard for anything that should end on its own (the machine is loaded).
GUARD = 120.0


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value else None


def _require_file(name: str, value: str) -> str:
    if not Path(value).is_file():
        pytest.fail(f"{name}={value} does not exist", pytrace=False)
    return value


def fake_llm_binary() -> str:
    path = _env("OMPRPC_FAKE_LLM")
    if path is None:
        pytest.skip("OMPRPC_FAKE_LLM is not set (make python-tests sets it): real-agent tests skipped")
    return _require_file("OMPRPC_FAKE_LLM", path)


#: Which pi a :class:`Workspace` runs: the newest (``OMPRPC_PI_CLI``) or the previous one
#: (``OMPRPC_PI_PREVIOUS_CLI``).
PI_NEWEST, PI_PREVIOUS = "newest", "previous"


def _node(var: str) -> str:
    node_name = _env("OMPRPC_NODE") or "node"
    node = shutil.which(node_name)
    if node is None:
        pytest.fail(f"{var} is set but {node_name!r} is not on PATH (set OMPRPC_NODE)", pytrace=False)
    return node


def pi_command(pi: str = PI_NEWEST) -> list[str]:
    """`node <cli>` for the newest pi (``OMPRPC_PI_CLI``, its Node ``OMPRPC_PI_NODE`` when set) or
    the previous one (``OMPRPC_PI_PREVIOUS_CLI``, run by ``node``); skips when the variable is
    unset."""
    var = "OMPRPC_PI_CLI" if pi == PI_NEWEST else "OMPRPC_PI_PREVIOUS_CLI"
    cli = _env(var)
    if cli is None:
        pytest.skip(f"{var} is not set (make python-tests sets it): real pi ({pi}) tests skipped")
    _require_file(var, cli)
    if pi == PI_NEWEST:
        pi_node = _env("OMPRPC_PI_NODE")
        if pi_node is not None:
            return [_require_file("OMPRPC_PI_NODE", pi_node), cli]
    return [_node(var), cli]


def omp_command() -> list[str]:
    """`bun <cli>`; skips when OMPRPC_OMP_CLI is unset."""
    cli = _env("OMPRPC_OMP_CLI")
    if cli is None:
        pytest.skip("OMPRPC_OMP_CLI is not set (make python-tests sets it): real omp tests skipped")
    _require_file("OMPRPC_OMP_CLI", cli)
    bun = _env("OMPRPC_BUN")
    if bun is None:
        pytest.fail("OMPRPC_OMP_CLI is set but OMPRPC_BUN is not (omp runs as `bun cli.js`)", pytrace=False)
    return [_require_file("OMPRPC_BUN", bun), cli]


class FakeLlm:
    """A running omprpc-fake-llm with a script; every request body is logged."""

    def __init__(self, binary: str, script: Any, root: Path):
        self.script_path = root / "llm-script.json"
        self.script_path.write_text(json.dumps(script))
        self.log = root / "llm-requests.jsonl"
        # stdin held open: the server exits when this process dies (--exit-on-eof).
        self.proc = subprocess.Popen(
            [binary, "--script", str(self.script_path), "--log", str(self.log), "--exit-on-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("LISTENING "):
            self.close()
            pytest.fail(f"the fake LLM said {line!r} instead of LISTENING <port>", pytrace=False)
        self.port = int(line.split()[1])

    def requests(self) -> list[Any]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Workspace:
    """One throw-away agent environment: HOME, an agent dir with the provider file (written
    by omprpc.provider_config), a working dir, and the fake LLM serving ``script``.

    ``pi``: which pi (:data:`PI_NEWEST` or :data:`PI_PREVIOUS`) when ``agent`` is "pi".
    ``settings``: the agent's own settings, written into the agent dir (pi: ``settings.json``,
    omp: ``config.yml``, whose JSON is valid YAML), e.g. ``{"retry": {"baseDelayMs": 300}}``."""

    def __init__(self, agent: str, script: Any, *, pi: str = PI_NEWEST, settings: Any = None):
        binary = fake_llm_binary()
        self.agent = agent
        self.pi = pi
        self.command = pi_command(pi) if agent == "pi" else omp_command()
        self.root = Path(tempfile.mkdtemp(prefix=f"omprpc-py-real-{agent}-"))
        self.home, self.agent_dir, self.work = self.root / "home", self.root / "agent", self.root / "work"
        self.tmp = self.root / "tmp"  # the agent's TMPDIR (pi keeps full bash output there)
        for d in (self.home, self.agent_dir, self.work, self.tmp):
            d.mkdir()
        try:
            self.llm = FakeLlm(binary, script, self.root)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        try:
            self._write_provider()
            if settings is not None:
                name = "settings.json" if agent == "pi" else "config.yml"
                (self.agent_dir / name).write_text(json.dumps(settings))
        except BaseException:
            self.close()
            raise

    def _write_provider(self) -> None:
        self.provider = omprpc.provider_config(
            {"fake": {
                "baseUrl": f"http://127.0.0.1:{self.llm.port}/v1", "api": "openai-completions", "apiKey": "fake-key",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "fake-model", "name": "Fake Model", "reasoning": False, "input": ["text"],
                            "contextWindow": 128000, "maxTokens": 4096}],
            }},
            flavor=self.agent, dir=self.agent_dir,
        )

    def write_file(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def llm_requests(self) -> list[Any]:
        return self.llm.requests()

    def client_kwargs(self, extra_args: tuple[str, ...] = (), **kwargs: Any) -> dict[str, Any]:
        """RpcClient keyword arguments: the agent's argv (``node|bun cli.js --mode rpc …``),
        its private environment (nothing inherited), generous timeouts; ``kwargs`` on top."""
        if self.agent == "pi":
            flags = ["--mode", "rpc", "--no-session", "--offline", "--model", "fake/fake-model"]
            extra_env = {"PI_OFFLINE": "1"}
        else:
            flags = ["--mode", "rpc", "--no-session", "--no-title", "--model", "fake/fake-model"]
            extra_env = {}
        env = {"HOME": str(self.home), "TMPDIR": str(self.tmp), "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), **extra_env}
        options: dict[str, Any] = {
            "command": [*self.command, *flags, *extra_args],
            "flavor": self.agent,
            "cwd": self.work,
            "inherit_env": False,
            "startup_timeout": GUARD,
            "request_timeout": 60.0,
            "core_options": {"stop_grace_ms": 5000},
            **self.provider.client_options(env=env),
        }
        options.pop("model", None)  # in the argv already
        options.update(kwargs)
        return options

    def close(self) -> None:
        self.llm.close()
        if os.environ.get("OMPRPC_KEEP_TMP") == "1":
            print(f"kept {self.root}")
            return
        shutil.rmtree(self.root, ignore_errors=True)


#: The real agents each test module started: module name → {"pi 1.6.0", "omp 18.2.3", …}.
AGENTS_RUN: dict[str, set[str]] = {}


def note_agent(module: str, info: dict[str, Any]) -> str:
    """Notes the agent a client of ``module`` runs (its ``info()``: flavor and ``agentVersion``)
    for the run's summary; returns it as "pi 1.6.0"."""
    name = f"{info.get('flavor')} {info.get('agentVersion') or '(version unknown)'}"
    AGENTS_RUN.setdefault(module.rsplit(".", 1)[-1], set()).add(name)
    return name


def group_gone(pid: int) -> bool:
    """True when neither the process ``pid`` nor its process group exists (the library
    starts the agent as a process-group leader)."""
    for probe in (lambda: os.kill(pid, 0), lambda: os.killpg(pid, 0)):
        try:
            probe()
        except ProcessLookupError:
            continue
        except PermissionError:
            return False
        return False
    return True


def result_text(result: Any) -> str:
    """The text parts of a tool result (``{"content": [{"type": "text", "text"}, …]}``)."""
    content = result.get("content") if isinstance(result, dict) else None
    return "".join(c.get("text", "") for c in content or () if isinstance(c, dict) and c.get("type") == "text")


def message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or () if isinstance(c, dict) and c.get("type") == "text")


# --- recovery: retries, overflow compactions and aborts of real agents (issue 21) ------------

#: The agents the recovery tests run on, each a label: the newest pi (announces settling),
#: the previous pi (0.73.1: its prompts end at the last agent_end) and omp.
RECOVERY_AGENTS = ("pi", "pi-previous", "omp")


def recovery_workspace(label: str, script: Any, settings: Any = None) -> Workspace:
    """A :class:`Workspace` for one of :data:`RECOVERY_AGENTS`."""
    if label == "omp":
        return Workspace("omp", script, settings=settings)
    return Workspace("pi", script, pi=PI_PREVIOUS if label == "pi-previous" else PI_NEWEST, settings=settings)


def version_tuple(version: object) -> tuple[int, ...]:
    parts = str(version or "").split("-")[0].split(".")
    return tuple(int(p) for p in parts if p.isdigit())


def settles(info: dict[str, Any]) -> bool:
    """Whether the agent announces settling (``agent_settled``): pi 0.80.4 on (an expectation of
    the tests, from the version the client's ``info()`` reports)."""
    return info.get("flavor") == "pi" and version_tuple(info.get("agentVersion")) >= (0, 80, 4)


def concurrently(jobs: dict[str, Any]) -> dict[str, Any]:
    """Runs each ``label → fn()`` on a thread of its own, all at once (real agents are slow to
    start and to answer; the tests of several run side by side); returns ``label → result``.
    Raises an AssertionError naming every label whose job raised (its traceback in the text)."""
    import threading
    import time
    import traceback

    results: dict[str, Any] = {}
    failures: dict[str, str] = {}

    def run(label: str, fn: Any) -> None:
        t0 = time.monotonic()
        try:
            results[label] = fn()
        except BaseException:  # noqa: BLE001 - reported below with the label
            failures[label] = traceback.format_exc()
        print(f"{label}: {time.monotonic() - t0:.2f} s")

    threads = [threading.Thread(target=run, args=item, daemon=True, name=f"agent-{item[0]}") for item in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GUARD * 2)
        if t.is_alive():
            failures[t.name] = f"still running after {GUARD * 2} s"
    if failures:
        raise AssertionError("\n".join(f"--- {label}:\n{text}" for label, text in sorted(failures.items())))
    return results


class EventLog:
    """Every event payload a sync client's listeners see, each with the time it arrived."""

    def __init__(self, client: omprpc.RpcClient):
        import threading

        self.items: list[tuple[float, dict[str, Any]]] = []
        self.cond = threading.Condition()
        client.on_event_payload(self._add)

    def _add(self, payload: dict[str, Any]) -> None:
        import time

        with self.cond:
            self.items.append((time.monotonic(), payload))
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.items)

    def wait(self, what: str, event_type: str, since: int = 0,
             where: Any = None) -> tuple[float, dict[str, Any]]:
        """The first event of ``event_type`` from ``since`` on (for which ``where(event)`` is
        true, when given), with its arrival time (hang guard: :data:`GUARD`)."""
        import time

        deadline = time.monotonic() + GUARD
        with self.cond:
            while True:
                for at, payload in self.items[since:]:
                    if payload.get("type") == event_type and (where is None or where(payload)):
                        return at, payload
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {what} ({event_type}) within {GUARD} s")
                self.cond.wait(left)
