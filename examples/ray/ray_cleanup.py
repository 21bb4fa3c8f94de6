"""Ends what is left of a local Ray cluster, found by its temp dir (every Ray process of a
cluster started with ``_temp_dir=DIR`` carries DIR in its command line).

    python examples/ray/ray_cleanup.py DIR     # kill what is left, remove DIR; exit 1 if anything was left

``ray.shutdown()`` ends the cluster a driver started, but a driver that is itself killed (a
test run's timeout) leaves worker processes orphaned for a while: `make ray-test` runs this
after the test whatever its outcome, and the test's fixture uses it after ``ray.shutdown()``.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path


def processes_mentioning(text: str) -> list[int]:
    """Processes other than this one whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if text.encode() in cmdline:
            found.append(int(entry.name))
    return found


def sweep(temp_dir: str, grace: float = 0.0) -> list[int]:
    """Waits up to ``grace`` seconds for the cluster's processes to end by themselves, kills
    the rest (SIGKILL, by pid), removes ``temp_dir``; returns the pids it had to kill."""
    deadline = time.monotonic() + grace
    while (left := processes_mentioning(temp_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(temp_dir, ignore_errors=True)
    return left


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1]:
        sys.exit("usage: ray_cleanup.py TEMP_DIR")
    killed = sweep(sys.argv[1])
    if killed:
        print(f"ray_cleanup: killed Ray processes left behind: {killed}", file=sys.stderr)
    sys.exit(1 if killed else 0)
