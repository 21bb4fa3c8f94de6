"""Test support for the real-agent tests (test_real_agents.py): the real pi / omp offline
against the project's fake LLM, each test in a throw-away workspace.

Environment (set by `make python-tests`, see the Makefile's REAL_AGENT_ENV):

* ``OMPRPC_FAKE_LLM``: the ``omprpc-fake-llm`` binary (``--script FILE --log FILE
  --exit-on-eof``, first stdout line ``LISTENING <port>``);
* ``OMPRPC_PI_CLI``: pi's ``dist/cli.js``, run with ``node`` (``OMPRPC_NODE`` or ``node`` on
  PATH);
* ``OMPRPC_OMP_CLI`` and ``OMPRPC_BUN``: omp's ``dist/cli.js``, run as ``bun cli.js``.

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


def pi_command() -> list[str]:
    """`node <cli>`; skips when OMPRPC_PI_CLI is unset."""
    cli = _env("OMPRPC_PI_CLI")
    if cli is None:
        pytest.skip("OMPRPC_PI_CLI is not set (make python-tests sets it): real pi tests skipped")
    _require_file("OMPRPC_PI_CLI", cli)
    node_name = _env("OMPRPC_NODE") or "node"
    node = shutil.which(node_name)
    if node is None:
        pytest.fail(f"OMPRPC_PI_CLI is set but {node_name!r} is not on PATH (set OMPRPC_NODE)", pytrace=False)
    return [node, cli]


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
    by omprpc.provider_config), a working dir, and the fake LLM serving ``script``."""

    def __init__(self, agent: str, script: Any):
        binary = fake_llm_binary()
        self.agent = agent
        self.command = pi_command() if agent == "pi" else omp_command()
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
