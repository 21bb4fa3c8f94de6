#!/usr/bin/env python3
"""Throughput and memory of ``prompt_and_wait`` over the fake agent's ``burst N`` prompt.

    OMPRPC_LIBRARY=target/release/libomprpc.so python3 bindings/python/bench.py [--events 100000]

The fake agent is ``$OMPRPC_FAKE_AGENT``, else the repository's target/release (or debug)
``omprpc-fake-agent``. Each run: one prompt whose turn has N ``message_update`` events of 640
bytes (plus 6 others); events/s = events of the turn / wall time of prompt_and_wait. Peak RSS
is the process's high-water mark (``ru_maxrss``) after all runs of a mode. Modes:

* ``plain``     — prompt_and_wait only (the turn's events are not decoded);
* ``listener``  — plus an ``on_message_update`` listener (every event decoded and typed on the
  dispatcher thread; prompt_and_wait waits for the listener to catch up; the event queue is
  enlarged so that no event is dropped);
* ``decoded``   — plain, then ``turn.events`` (all events typed).

Each mode runs in a fresh process, so the peak RSS of one does not hide another's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))


def _agent() -> str:
    env = os.environ.get("OMPRPC_FAKE_AGENT")
    if env:
        return env
    for kind in ("release", "debug"):
        path = REPO / "target" / kind / "omprpc-fake-agent"
        if path.is_file():
            return str(path)
    raise SystemExit("no fake agent: build it (cargo build --release --bin omprpc-fake-agent) or set OMPRPC_FAKE_AGENT")


def run_mode(mode: str, events: int, runs: int) -> dict:
    from omprpc import LIBRARY_PATH, RpcClient

    options = {}
    if mode == "listener":  # the listener must see every event: no drops, wait for it
        options = {"core_options": {"event_queue_capacity": 4 * events}, "listener_sync_timeout": 600.0}
    client = RpcClient(command=[_agent()], max_event_history=None, startup_timeout=30, **options)
    updates = 0

    def count(_event: object) -> None:
        nonlocal updates
        updates += 1

    if mode == "listener":
        client.on_message_update(count)
    times = []
    with client:
        client.prompt_and_wait("burst 100", timeout=60)  # warm-up
        for _ in range(runs):
            t0 = time.perf_counter()
            turn = client.prompt_and_wait(f"burst {events}", timeout=600)
            if mode == "decoded":
                assert len(turn.events) == events + 6
            times.append(time.perf_counter() - t0)
            assert turn.assistant_text == "pong"
            del turn
    if mode == "listener":
        assert updates == 100 + runs * events, updates
    total = events + 6
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "mode": mode,
        "library": LIBRARY_PATH,
        "events_per_turn": total,
        "runs": runs,
        "best_events_per_s": round(total / min(times)),
        "median_events_per_s": round(total / statistics.median(times)),
        "median_turn_s": round(statistics.median(times), 4),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mode", choices=("plain", "listener", "decoded", "all"), default="all")
    parser.add_argument("--json", action="store_true", help="one JSON object per mode")
    args = parser.parse_args()
    if args.mode != "all":
        result = run_mode(args.mode, args.events, args.runs)
        print(json.dumps(result))
        return
    for mode in ("plain", "listener", "decoded"):
        out = subprocess.run([sys.executable, __file__, "--mode", mode, "--events", str(args.events),
                              "--runs", str(args.runs)], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{mode:9s} {result['events_per_turn']} events: best {result['best_events_per_s']:>9,} ev/s, "
                  f"median {result['median_events_per_s']:>9,} ev/s ({result['median_turn_s']} s/turn), "
                  f"peak RSS {result['peak_rss_mib']} MiB")
    print(f"library: {result['library']}")


if __name__ == "__main__":
    main()
