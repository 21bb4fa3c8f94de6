"""Many agents on Ray: each agent is a Ray actor holding one omprpc client, and the driver
streams every turn back chunk by chunk.

    python examples/ray/ray_agents.py --agents 4 -- omprpc-fake-agent
    python examples/ray/ray_agents.py --agents 2 --prompt "say hello" -- pi --mode rpc --model x

What runs where:

* the driver (this process) starts or joins a Ray cluster and creates the actors;
* each actor is a Ray worker process that imports omprpc, starts its agent as a child
  process (the library puts it in a process group of its own) and keeps it for its lifetime;
* a turn is an actor *generator* method: chunks (text and reasoning deltas) are yielded as the
  agent streams them, and the last item is the turn's outcome (stop reason, text, usage);
  the driver multiplexes all generators with ``ray.wait``.

Teardown: ``close()`` stops the agent through the library (stdin EOF, grace, SIGTERM, SIGKILL
to its group). An actor that dies abruptly (``ray.kill``, OOM killer, node loss) runs no
Python and no library code; its agent then ends because its stdin reaches EOF when the
kernel closes the dead worker's pipe end — which every agent omprpc drives (omp, pi, the fake
agent) treats as "shut down". docs/scaling.md says what that covers and what it does not.

Nothing here is Ray-specific protocol logic: the actor only forwards what the client gives.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import ray

from omprpc import RpcClient

#: What an agent reserves of a Ray node's CPUs. An idle agent uses next to none, a streaming
#: fake agent little; a real agent's turn is mostly waiting on its model (docs/scaling.md has
#: the measured CPU-seconds per turn). Override per actor with ``AgentActor.options(num_cpus=…)``.
AGENT_CPUS = 0.25

#: The item that ends a turn's stream (after its last chunk).
TURN_END = "turn_end"


@ray.remote(num_cpus=AGENT_CPUS, max_restarts=0, max_concurrency=2)
class AgentActor:
    """One agent process and its omprpc client, for the actor's lifetime.

    ``max_concurrency=2``: while ``stream_turn`` streams on one thread, ``abort`` (or
    ``agent_pid``) can run on the other. Turns themselves are sequential: the client has one
    agent, and the agent runs one turn at a time.
    """

    def __init__(self, command: Sequence[str], client_options: Mapping[str, Any] | None = None):
        self._client = RpcClient(command=list(command), **dict(client_options or {}))
        self._client.start()

    def agent_pid(self) -> int:
        """The agent process's pid (it leads its own process group)."""
        return int(self._client.info()["pid"])

    def worker_pid(self) -> int:
        """The Ray worker process holding the client."""
        return os.getpid()

    def stream_turn(self, message: str) -> Iterator[dict[str, Any]]:
        """Prompts and yields the turn as it streams: ``{"kind": "text"|"thinking", "delta"}``
        per chunk, then one ``{"kind": "turn_end", …}``. A failed turn raises (Ray hands the
        exception to the driver at that point of the stream)."""
        chunks: queue.Queue[dict[str, Any] | None] = queue.Queue()

        def on_update(event: Any) -> None:
            update = event.assistant_message_event
            kind = {"text_delta": "text", "thinking_delta": "thinking"}.get(update.get("type"))
            if kind is not None:
                chunks.put({"kind": kind, "delta": update.get("delta", "")})

        outcome: dict[str, Any] = {}

        def run_turn() -> None:
            try:
                outcome["turn"] = self._client.prompt_and_wait(message)
            except BaseException as exc:  # handed to the stream below
                outcome["error"] = exc
            finally:
                # Listeners have seen every event of the turn once prompt_and_wait returned or
                # raised, so this None comes after the turn's last chunk.
                chunks.put(None)

        unsubscribe = self._client.on_message_update(on_update)
        # prompt_and_wait blocks in the library (GIL released); a thread lets this generator
        # yield chunks meanwhile. One thread per turn, not per chunk.
        runner = threading.Thread(target=run_turn, name="omprpc-turn", daemon=True)
        runner.start()
        try:
            while (chunk := chunks.get()) is not None:
                yield chunk
        finally:
            runner.join()
            unsubscribe()
        if "error" in outcome:
            raise outcome["error"]
        turn = outcome["turn"]
        yield {"kind": TURN_END, "stop_reason": turn.stop_reason, "text": turn.assistant_text,
               "usage": turn.usage, "error": turn.error_message}

    def abort(self) -> None:
        """Aborts the running turn (its stream then ends with ``stop_reason`` "aborted")."""
        self._client.abort()

    def close(self) -> None:
        """Stops the agent through the library's teardown; the actor can then be dropped."""
        self._client.stop()


def stream_all(streams: Mapping[Any, Any], timeout: float = 60.0) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Multiplexes actor streams (``{key: actor.stream_turn.remote(msg)}``) as their items
    arrive: ``(key, item)``. A stream whose actor died or whose turn failed yields
    ``(key, {"kind": "error", "error": exc})`` and ends; the others go on. ``timeout``: the
    longest wait for *any* stream to move, after which TimeoutError is raised (a hang guard)."""
    live = {stream: key for key, stream in streams.items()}
    while live:
        ready, _ = ray.wait(list(live), num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError(f"no stream moved in {timeout} s: {sorted(map(str, live.values()))}")
        for stream in ready:
            key = live[stream]
            try:
                yield key, ray.get(next(stream))
            except StopIteration:
                del live[stream]
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:
                del live[stream]
                yield key, {"kind": "error", "error": exc}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=4, help="how many agents (actors)")
    parser.add_argument("--prompt", default="say hello", help="the prompt every agent gets")
    parser.add_argument("--address", default=None,
                        help="an existing cluster (ray.init address); default: a local one")
    parser.add_argument("command", nargs="+", help="the agent's argv, after --")
    args = parser.parse_args(argv)

    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(include_dashboard=False)
    try:
        actors = [AgentActor.remote(args.command) for _ in range(args.agents)]
        streams = {i: actor.stream_turn.remote(args.prompt) for i, actor in enumerate(actors)}
        failed = 0
        for i, item in stream_all(streams):
            if item["kind"] in ("text", "thinking"):
                print(f"[agent {i}] {item['kind']}: {item['delta']!r}", flush=True)
            elif item["kind"] == TURN_END:
                print(f"[agent {i}] done ({item['stop_reason']}): {item['text']!r} usage={item['usage']}")
            else:
                failed += 1
                print(f"[agent {i}] failed: {item['error']}", file=sys.stderr)
        ray.get([actor.close.remote() for actor in actors])
        return 1 if failed else 0
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
