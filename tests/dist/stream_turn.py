"""make dist-test: the installed wheel streams a turn from the fake agent.

Environment: OMPRPC_AGENT (the fake agent), EXPECTED_VERSION, EXPECTED_LIBRARY (where the
library must have been loaded from: a directory it lies under, or the soname it was opened by).
Prints one PASS line; any failure raises.
"""

import os
import sys
import threading

import omprpc
from omprpc import RpcClient

expected_library = os.environ["EXPECTED_LIBRARY"]
loaded = omprpc.LIBRARY_PATH
if os.sep in expected_library:
    assert os.path.realpath(loaded).startswith(os.path.realpath(expected_library) + os.sep), (loaded, expected_library)
else:
    assert loaded == expected_library, (loaded, expected_library)
# The installed package, not a checkout's copy.
assert os.path.realpath(omprpc.__file__).startswith(os.path.realpath(sys.prefix)), omprpc.__file__
assert omprpc.__version__ == os.environ["EXPECTED_VERSION"], omprpc.__version__

deltas: list[str] = []
lock = threading.Lock()


def on_update(event) -> None:
    if event.assistant_message_event.get("type") == "text_delta":
        with lock:
            deltas.append(event.assistant_message_event["delta"])


with RpcClient(command=[os.environ["OMPRPC_AGENT"]]) as client:
    client.on_message_update(on_update)
    turn = client.prompt_and_wait("ping")
assert turn.assistant_text == "pong", turn.assistant_text
# Listeners have run for every event before prompt_and_wait returned (README: How it runs).
with lock:
    assert "".join(deltas) == "pong", deltas
print(f"dist-test: PASS python (omprpc {omprpc.__version__} from {loaded}, streamed {deltas})")
