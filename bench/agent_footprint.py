"""How many agents fit on one machine: memory per agent, CPU per turn, start-up time.

    make build
    OMPRPC_FAKE_AGENT=... OMPRPC_FAKE_LLM=... OMPRPC_PI_CLI=... OMPRPC_OMP_CLI=... OMPRPC_BUN=... \\
      OMPRPC_LIBRARY=.../libomprpc.so PYTHONPATH=bindings/python \\
      python3 bench/agent_footprint.py --agents 4 --turns 3 [--kinds fake,pi,omp] [--json FILE]

(the Makefile's REAL_AGENT_PATHS names the real agents' paths). Not part of `make test`: it
measures, it asserts nothing. The figures in docs/scaling.md come from it.

For each kind of agent, K clients are started one after the other in this process, each
agent run the way the real-agent tests run it (offline, against omprpc-fake-llm, a private
HOME; bindings/python/tests/real_agents_support.py). Then, per agent:

* start-up: wall time of ``start()`` (until the agent answered; the library's probe of the
  agent's version included) and the CPU-seconds its process tree used to get there;
* memory once idle, and again after the turns: RSS and PSS summed over the agent's process
  group (PSS shares the pages K copies of the same runtime have in common among them, so it
  is the figure that adds up; RSS counts them K times);
* CPU-seconds per turn (the first turn apart: it warms the agent's runtime up): the agent's process tree (user + system, its reaped children — a
  tool's subprocess — included) over one streamed turn, and this host process's own (the
  library's reader and the binding's dispatcher);
* the host's overhead: this process's RSS growth per client (library + binding state).

Wall times depend on the machine's load; CPU-seconds and memory much less. The fake LLM's
own CPU is not counted (it stands in for a remote model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bindings" / "python" / "tests"))  # the real-agent workspace

import omprpc  # noqa: E402
from real_agents_support import Workspace  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")

#: A typical streamed turn for the real agents: reasoning, some text and one bash tool call,
#: then a longer answer that quotes the tool's output (two model calls, one tool run).
TYPICAL_TURN = {"match": "typical turn", "replies": [
    {"reasoning": "The user wants the date; I will run a command to get it. " * 3,
     "text": "Let me check that for you. ",
     "tool_call": {"name": "bash", "arguments": {"command": "date -u +%Y"}}},
    {"text": ("The command printed {{last_tool_result}} which is the current year. " * 12).strip()},
]}
#: The fake agent's nearest equivalent: a reasoning chunk and a text chunk.
FAKE_TURN = "thinking"


def stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(")") + 2:].split()  # fields 3… (the name may hold spaces)


def group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids


def group_cpu(pgid: int) -> float:
    """CPU-seconds of the group's live processes, with their reaped children's."""
    total = 0
    for pid in group(pgid):
        if fields := stat_fields(pid):
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


def group_memory(pgid: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB summed over the group."""
    rss = pss = 0
    for pid in group(pgid):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                name, _, value = line.partition(":")
                if name == "Rss":
                    rss += int(value.split()[0])
                elif name == "Pss":
                    pss += int(value.split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return rss / 1024, pss / 1024


def self_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def client_options(kind: str, ws: Workspace | None) -> dict[str, Any]:
    if ws is None:
        return {"command": [os.environ["OMPRPC_FAKE_AGENT"]], "startup_timeout": 120.0}
    return ws.client_kwargs()


def measure(kind: str, agents: int, turns: int) -> dict[str, Any]:
    ws = None if kind == "fake" else Workspace(kind, [TYPICAL_TURN])
    prompt = FAKE_TURN if kind == "fake" else "typical turn"
    clients: list[omprpc.RpcClient] = []
    rows: list[dict[str, Any]] = []
    try:
        host_before = self_rss_mib()
        for _ in range(agents):
            client = omprpc.RpcClient(**client_options(kind, ws))
            began = time.monotonic()
            client.start()
            wall = time.monotonic() - began
            pid = int(client.info()["pid"])
            clients.append(client)
            rows.append({"pid": pid, "start_s": wall, "start_cpu_s": group_cpu(pid)})
        time.sleep(1.0)  # settle: whatever the agent does right after start-up
        host_idle = self_rss_mib()
        for row in rows:
            row["idle_rss_mib"], row["idle_pss_mib"] = group_memory(row["pid"])
        first_turn_cpu: list[float] = []  # the first turn warms the agent's runtime up (JIT, lazy imports)
        turn_cpu: list[float] = []
        host_turn_cpu: list[float] = []
        turn_wall: list[float] = []
        for client, row in zip(clients, rows):
            for index in range(turns):
                agent_before, host_cpu_before, began = group_cpu(row["pid"]), self_cpu(), time.monotonic()
                turn = client.prompt_and_wait(prompt, timeout=120.0)
                turn_wall.append(time.monotonic() - began)
                (first_turn_cpu if index == 0 else turn_cpu).append(group_cpu(row["pid"]) - agent_before)
                host_turn_cpu.append(self_cpu() - host_cpu_before)
                text = turn.assistant_text or ""
                # The real agents' answer quotes the tool's output: the whole typical turn ran.
                if turn.error_message or not text or (ws is not None and "which is the current year" not in text):
                    raise RuntimeError(f"{kind}: not the expected turn: {turn.error_message!r} {turn.stop_reason!r} {text!r}")
        for row in rows:
            row["busy_rss_mib"], row["busy_pss_mib"] = group_memory(row["pid"])
        host_after = self_rss_mib()
        return {
            "kind": kind, "agents": agents, "turns_per_agent": turns,
            "start_s_median": statistics.median(r["start_s"] for r in rows),
            "start_cpu_s_median": statistics.median(r["start_cpu_s"] for r in rows),
            "idle_rss_mib_median": statistics.median(r["idle_rss_mib"] for r in rows),
            "idle_pss_mib_median": statistics.median(r["idle_pss_mib"] for r in rows),
            "busy_rss_mib_median": statistics.median(r["busy_rss_mib"] for r in rows),
            "busy_pss_mib_median": statistics.median(r["busy_pss_mib"] for r in rows),
            "first_turn_cpu_s_median": statistics.median(first_turn_cpu),
            "turn_cpu_s_median": statistics.median(turn_cpu or first_turn_cpu),
            "host_turn_cpu_s_median": statistics.median(host_turn_cpu),
            "turn_wall_s_median": statistics.median(turn_wall),
            "host_rss_mib_per_client_idle": (host_idle - host_before) / agents,
            "host_rss_mib_per_client_after_turns": (host_after - host_before) / agents,
            "per_agent": rows,
        }
    finally:
        for client in clients:
            client.stop()
        if ws is not None:
            ws.close()


def process_memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MiB of one process."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "Rss":
            rss = int(value.split()[0])
        elif name == "Pss":
            pss = int(value.split()[0])
    return rss / 1024, pss / 1024


def measure_ray(actors: int) -> dict[str, Any]:
    """What Ray adds: the memory of a local cluster's own processes, and of each actor's
    worker process holding a client (the agent's own memory is measured above). Needs ray
    (``make ray-test`` installs it into target/ray/venv; run this script with that python)
    and examples/ray on PYTHONPATH."""
    import tempfile

    import ray
    from ray_agents import AgentActor
    from ray_cleanup import processes_mentioning, sweep

    temp_dir = tempfile.mkdtemp(prefix="omprpc-ray-")
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 1024 * 1024,
             _temp_dir=temp_dir, configure_logging=False, log_to_driver=False)
    try:
        handles = [AgentActor.remote([os.environ["OMPRPC_FAKE_AGENT"]]) for _ in range(actors)]
        workers = ray.get([h.worker_pid.remote() for h in handles], timeout=300)
        ray.get([h.stream_turn.remote(FAKE_TURN).__next__() for h in handles], timeout=300)
        time.sleep(1.0)
        worker_memory = [process_memory(pid) for pid in workers]
        cluster_memory = []
        for pid in processes_mentioning(temp_dir):
            try:
                if pid not in workers:
                    cluster_memory.append(process_memory(pid))
            except (FileNotFoundError, ProcessLookupError):
                continue  # ended meanwhile
        return {"actors": actors,
                "worker_rss_mib_median": statistics.median(m[0] for m in worker_memory),
                "worker_pss_mib_median": statistics.median(m[1] for m in worker_memory),
                "cluster_processes": len(cluster_memory),
                "cluster_rss_mib": sum(m[0] for m in cluster_memory),
                "cluster_pss_mib": sum(m[1] for m in cluster_memory)}
    finally:
        ray.shutdown()
        sweep(temp_dir, grace=30.0)


def main() -> int:
    parser = argparse.ArgumentParser(description="memory, CPU and start-up per agent")
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--kinds", default="fake,pi,omp")
    parser.add_argument("--ray-actors", type=int, default=0,
                        help="also measure what Ray adds, with this many actors (needs ray)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    results = []
    for kind in filter(None, args.kinds.split(",")):
        print(f"measuring {kind}: {args.agents} agents, {args.turns} turns each …", file=sys.stderr, flush=True)
        results.append(measure(kind, args.agents, args.turns))
    machine = {
        "cpus": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "loadavg": os.getloadavg(), "kernel": platform.release(), "omprpc": omprpc.__version__,
    }
    print(f"machine: {machine['cpus']} CPUs, {machine['mem_gib']} GiB, load average "
          f"{' '.join(f'{x:.1f}' for x in machine['loadavg'])} at the end")
    print("| agent | K | start (s, wall) | start (CPU-s) | idle RSS / PSS (MiB) | after turns RSS / PSS (MiB) "
          "| CPU-s first turn (agent) | CPU-s per later turn (agent) | CPU-s per turn (host) | turn (s, wall) | host RSS per client (MiB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['kind']} | {r['agents']} | {r['start_s_median']:.2f} | {r['start_cpu_s_median']:.2f} "
              f"| {r['idle_rss_mib_median']:.0f} / {r['idle_pss_mib_median']:.0f} "
              f"| {r['busy_rss_mib_median']:.0f} / {r['busy_pss_mib_median']:.0f} "
              f"| {r['first_turn_cpu_s_median']:.3f} | {r['turn_cpu_s_median']:.3f} | {r['host_turn_cpu_s_median']:.4f} | {r['turn_wall_s_median']:.2f} "
              f"| {r['host_rss_mib_per_client_after_turns']:.2f} |")
    ray_figures = measure_ray(args.ray_actors) if args.ray_actors else None
    if ray_figures:
        print(f"Ray, {ray_figures['actors']} actors: per actor's worker RSS / PSS "
              f"{ray_figures['worker_rss_mib_median']:.0f} / {ray_figures['worker_pss_mib_median']:.0f} MiB; "
              f"the cluster's own {ray_figures['cluster_processes']} processes "
              f"{ray_figures['cluster_rss_mib']:.0f} / {ray_figures['cluster_pss_mib']:.0f} MiB")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": results, "ray": ray_figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
