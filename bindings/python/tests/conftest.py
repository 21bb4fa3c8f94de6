"""Shared fixtures: the project's fake agent (env OMPRPC_FAKE_AGENT, default
<repo>/target/debug/omprpc-fake-agent) and a client factory that always stops its clients."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
REPO = PACKAGE_ROOT.parents[1]

try:  # an installed omprpc is tested as installed; otherwise the checkout's copy
    import omprpc  # noqa: F401
except ImportError as exc:
    if "cannot find the omprpc shared library" in str(exc) or "ABI" in str(exc):
        raise
    sys.path.insert(0, str(PACKAGE_ROOT))

import omprpc  # noqa: E402
from omprpc import RpcClient  # noqa: E402

#: The directory holding the omprpc package under test (for subprocesses).
IMPORT_ROOT = Path(omprpc.__file__).resolve().parent.parent


def fake_agent_path() -> str:
    path = os.environ.get("OMPRPC_FAKE_AGENT") or str(REPO / "target" / "debug" / "omprpc-fake-agent")
    if not Path(path).is_file():
        pytest.fail(
            f"the fake agent {path} does not exist: run `cargo build --bin omprpc-fake-agent` "
            "or set OMPRPC_FAKE_AGENT",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def fake_agent() -> str:
    return fake_agent_path()


def agent_command(fake: str, scenario: str | None = None, *, flavor: str | None = None, v2: bool = False,
                  extra: tuple[str, ...] = ()) -> list[str]:
    cmd = [fake]
    if scenario:
        cmd += ["--scenario", scenario]
    if flavor:
        cmd += ["--flavor", flavor]
    if v2:
        cmd.append("--v2")
    return cmd + list(extra)


MakeClient = Callable[..., RpcClient]


@pytest.fixture
def make_client(fake_agent: str) -> Iterator[MakeClient]:
    """make_client(scenario=None, *, flavor=None, v2=False, start=True, **RpcClient kwargs)."""
    made: list[RpcClient] = []

    def factory(scenario: str | None = None, *, flavor: str | None = None, v2: bool = False,
                start: bool = True, extra: tuple[str, ...] = (), **kwargs: Any) -> RpcClient:
        kwargs.setdefault("startup_timeout", 10.0)
        kwargs.setdefault("request_timeout", 10.0)
        if flavor is not None:
            kwargs.setdefault("flavor", flavor)
        kwargs.setdefault("core_options", {"stop_grace_ms": 2000, "kill_grace_ms": 1000})
        client = RpcClient(command=agent_command(fake_agent, scenario, flavor=flavor, v2=v2, extra=extra), **kwargs)
        made.append(client)
        if start:
            client.start()
        return client

    yield factory
    for client in made:
        client.stop()


def group_members(pgid: int, *, zombies: bool = True) -> list[int]:
    """The processes of process group ``pgid``, from /proc; with ``zombies`` also those that
    have exited but are not reaped yet (a leak when they are our children)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and (zombies or state != "Z"):
            out.append(int(entry))
    return out


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Which real agents each module ran on (real_agents_support.note_agent): shown even with
    -q, so the log of `make python-tests` says which pi the suite ran on."""
    support = sys.modules.get("real_agents_support")
    seen = getattr(support, "AGENTS_RUN", None)
    if not seen:
        return
    terminalreporter.write_sep("-", "real agents")
    for module in sorted(seen):
        terminalreporter.write_line(f"{module}: {', '.join(sorted(seen[module]))}")


def _modules_with(session: Any, name: str) -> list[Any]:
    modules = {id(m): m for m in (getattr(item, "module", None) for item in session.items) if hasattr(m, name)}
    return list(modules.values())


def pytest_collection_finish(session: Any) -> None:
    """A module whose real agents take seconds to start (``prestart()``, test_real_recovery.py)
    starts them now, in the background, while the modules before it run."""
    for module in _modules_with(session, "prestart"):
        module.prestart()


def pytest_sessionfinish(session: Any) -> None:
    for module in _modules_with(session, "close_prestarted"):
        module.close_prestarted()
