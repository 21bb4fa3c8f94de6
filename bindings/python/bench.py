#!/usr/bin/env python3
"""Throughput and memory of ``prompt_and_wait`` over the fake agent's ``burst N`` prompt.

Without arguments (how ``make bench`` runs it, bench/README.md): ONE measurement, one line

    events_per_sec=<n> rss_mib=<n> …

Env: ``OMPRPC_LIBRARY`` (the library; default: see the package), ``OMPRPC_FAKE_AGENT`` (default:
the repository's target/release, else target/debug ``omprpc-fake-agent``) and
``OMPRPC_BENCH_EVENTS`` (N, default 100000). A client with ``max_event_history=None`` is
started, warmed up with ``burst 100``, then the timed part is ``prompt_and_wait("burst N")``
and reading the returned turn's events the way a host does: ``turn.events`` (typed objects),
each one's ``type``, the final ``agent_end``'s messages and the assistant text. The line says
how the events were built: ``decode=lazy`` (each event's fields are decoded when first read,
the library writes a turn's events one per line) or ``decode=eager`` (an older library: every
event decoded when ``turn.events`` is first read). events/s = events of the turn (N + 6; N + 7
when the agent speaks pi 1.x, whose turn ends with ``agent_settled`` after the ``agent_end``:
``make bench`` runs the fake agent so, with ``OMPRPC_FAKE_FLAVOR=pi OMPRPC_FAKE_VERSION=1.6.0``)
/ the timed seconds; rss_mib = the process's peak RSS (VmHWM).

``--get-state [--count 2000] [--pin CPU]``: the round trip through omp_rpc's API, as its users
call it: ``RpcClient.get_state()`` (a typed ``SessionState``), ``count`` sequential calls after
100 warm-up ones (as the C API's ``omprpc_bench rtt``), optionally pinned to one CPU (with the
library's threads and the agent, which inherit it). One line:

    count=<n> p50_us=<n> p99_us=<n> mean_us=<n> max_us=<n> hwm_kib=<n>

Richer modes (``--report``, each mode in a fresh process, several runs, medians):

* ``plain``    — prompt_and_wait only (the turn's events are not read);
* ``lazy``     — the measurement above;
* ``decoded``  — every field of every event read (all of them decoded);
* ``listener`` — plain, plus an ``on_message_update`` listener (every event decoded and typed on
  the dispatcher thread; prompt_and_wait waits for it; the queue is enlarged so none drops).

    python3 bindings/python/bench.py --report [--events 100000] [--runs 5]
    python3 bindings/python/bench.py --mode decoded [--events N] [--runs R] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

MODES = ("plain", "lazy", "decoded", "listener")


def _agent() -> str:
    env = os.environ.get("OMPRPC_FAKE_AGENT")
    if env:
        return env
    for kind in ("release", "debug"):
        path = REPO / "target" / kind / "omprpc-fake-agent"
        if path.is_file():
            return str(path)
    raise SystemExit("no fake agent: build it (cargo build --release --bin omprpc-fake-agent) or set OMPRPC_FAKE_AGENT")


def _client_options() -> dict:
    """The fake agent's command, and the options that say what it speaks: as it is (omp), or
    ``OMPRPC_FAKE_FLAVOR`` / ``OMPRPC_FAKE_VERSION`` (e.g. pi 1.6.0), which the library does not
    pass on to the agent by itself (its environment allow-list): a pi host says ``flavor="pi"``."""
    command = [_agent()]
    options: dict = {}
    flavor = os.environ.get("OMPRPC_FAKE_FLAVOR")
    if flavor:
        command += ["--flavor", flavor]
        options["flavor"] = flavor
    version = os.environ.get("OMPRPC_FAKE_VERSION")
    if version:
        options["env"] = {"OMPRPC_FAKE_VERSION": version}
    return {"command": command, **options}


def _peak_rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource  # not Linux: ru_maxrss (KiB on Linux, bytes on macOS)

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def consume(turn, mode: str, events: int) -> str:
    """Reads the turn as a host does; returns how its events were built."""
    from omprpc import AgentEndEvent, UnknownNotification, _lazy

    if mode in ("plain", "listener"):
        assert turn.assistant_text == "pong"
        return "none"
    evs = turn.events
    lazy = bool(evs) and isinstance(evs[0], _lazy.LazyEvent)
    updates = 0
    if mode == "lazy":
        for ev in evs:
            if ev.type == "message_update":
                updates += 1
    else:  # decoded: every field of every event
        for ev in evs:
            for f in dataclasses.fields(ev):
                getattr(ev, f.name)
            if ev.type == "message_update":
                updates += 1
    # pi 1.x's turn ends with agent_settled, right after the last agent_end: one event more.
    # omp_rpc's typed events have no class for it: an UnknownNotification with its payload.
    last = evs[-1]
    settled = isinstance(last, UnknownNotification) and last.payload.get("type") == "agent_settled"
    assert settled == (turn.outcome == "agent_settled"), (last, turn.outcome)
    end = evs[-2] if settled else evs[-1]
    assert isinstance(end, AgentEndEvent) and end.messages, end
    assert updates == events and len(evs) == events + (7 if settled else 6), (updates, len(evs))
    assert turn.assistant_text == "pong"
    return "lazy" if lazy else "eager"


def run_mode(mode: str, events: int, runs: int) -> dict:
    from omprpc import LIBRARY_PATH, RpcClient

    options: dict = {}
    if mode == "listener":  # the listener must see every event: no drops, wait for it
        options = {"core_options": {"event_queue_capacity": 4 * events}, "listener_sync_timeout": 600.0}
    client = RpcClient(max_event_history=None, startup_timeout=30, **_client_options(), **options)
    updates = 0

    def count(_event: object) -> None:
        nonlocal updates
        updates += 1

    if mode == "listener":
        client.on_message_update(count)
    times = []
    decode = "none"
    total = events + 6
    with client:
        consume(client.prompt_and_wait("burst 100", timeout=60), "plain", 100)  # warm-up
        for _ in range(runs):
            t0 = time.perf_counter()
            turn = client.prompt_and_wait(f"burst {events}", timeout=600)
            decode = consume(turn, mode, events)
            times.append(time.perf_counter() - t0)
            total = events + (7 if turn.outcome == "agent_settled" else 6)
            del turn
    if mode == "listener":
        assert updates == 100 + runs * events, updates
    return {
        "mode": mode,
        "decode": decode,
        "library": LIBRARY_PATH,
        "events_per_turn": total,
        "runs": runs,
        "best_events_per_s": round(total / min(times)),
        "median_events_per_s": round(total / statistics.median(times)),
        "median_turn_s": round(statistics.median(times), 4),
        "peak_rss_mib": round(_peak_rss_mib(), 1),
    }


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank, as the C API's and the raw floor's (omprpc_bench.c, bench_run.rs)."""
    k = min(max(math.ceil(p * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[k - 1]


def get_state_round_trips(count: int, pin: int | None) -> None:
    """``count`` sequential ``get_state()`` calls through omp_rpc's API (typed SessionState),
    after 100 warm-up ones; one ``key=value`` line with the latencies."""
    from omprpc import RpcClient, SessionState

    if pin is not None:  # before the client starts: its threads and the agent inherit it
        os.sched_setaffinity(0, {pin})
    lat = []
    with RpcClient(startup_timeout=30, **_client_options()) as client:
        for _ in range(100):
            client.get_state()
        for _ in range(count):
            t0 = time.perf_counter()
            state = client.get_state()
            lat.append((time.perf_counter() - t0) * 1e6)
            assert isinstance(state, SessionState), state
    mean = sum(lat) / count
    lat.sort()
    print(f"count={count} p50_us={percentile(lat, 0.50):.2f} p99_us={percentile(lat, 0.99):.2f} "
          f"mean_us={mean:.2f} max_us={lat[-1]:.2f} hwm_kib={round(_peak_rss_mib() * 1024)} "
          f"consumed=RpcClient.get_state()->SessionState")


def one_measurement() -> None:
    """The `make bench` contract: one run, one line."""
    events = int(os.environ.get("OMPRPC_BENCH_EVENTS") or 100_000)
    r = run_mode("lazy", events, 1)
    print(f"events_per_sec={r['median_events_per_s']} rss_mib={r['peak_rss_mib']} "
          f"secs={r['median_turn_s']} events={r['events_per_turn']} lazy={int(r['decode'] == 'lazy')} "
          f"decode={r['decode']} consumed=turn.events(type-of-each,agent_end.messages,assistant_text)")


def main() -> None:
    if len(sys.argv) == 1:
        one_measurement()
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=int(os.environ.get("OMPRPC_BENCH_EVENTS") or 100_000))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--report", action="store_true", help="every mode, each in a fresh process")
    parser.add_argument("--json", action="store_true", help="one JSON object per mode")
    parser.add_argument("--get-state", action="store_true", help="get_state round trips (--count, --pin)")
    parser.add_argument("--count", type=int, default=2000, help="--get-state: timed calls")
    parser.add_argument("--pin", type=int, metavar="CPU", help="--get-state: run on this CPU only")
    args = parser.parse_args()
    if args.get_state:
        get_state_round_trips(max(args.count, 1), args.pin)
        return
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.events, args.runs)))
        return
    result: dict = {}
    for mode in MODES:
        out = subprocess.run([sys.executable, __file__, "--mode", mode, "--events", str(args.events),
                              "--runs", str(args.runs)], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{mode:9s} {result['events_per_turn']} events ({result['decode']:5s}): "
                  f"best {result['best_events_per_s']:>9,} ev/s, median {result['median_events_per_s']:>9,} ev/s "
                  f"({result['median_turn_s']} s/turn), peak RSS {result['peak_rss_mib']} MiB")
    if not args.json:
        print(f"library: {result.get('library')}")


if __name__ == "__main__":
    main()
