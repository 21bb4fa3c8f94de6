"""set_todos' input: todo items and phases as omp_rpc accepts them, normalised to the phases the
agent takes."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .errors import RpcError
from .protocol import TODO_STATUSES, JsonObject, TodoItem, TodoPhase

TodoSeed = str | TodoItem | Mapping[str, object]
TodoPhaseSeed = TodoPhase | Mapping[str, object]


def _normalize_todo_phases(todos: Sequence[TodoSeed | TodoPhaseSeed]) -> list[JsonObject]:
    """omp_rpc's set_todos input rules (spec §4.4), with status ``blocked`` accepted."""
    if isinstance(todos, (str, bytes)):
        raise RpcError("set_todos() takes a sequence of todo items or phases, not a string")
    if len(todos) == 0:
        return []
    counter = 0

    def next_task() -> str:
        nonlocal counter
        counter += 1
        return f"task-{counter}"

    def opt(value: object) -> str | None:
        return value if isinstance(value, str) else None

    def item(seed: object) -> JsonObject:
        if isinstance(seed, str):
            return {"id": next_task(), "content": seed, "status": "pending"}
        if isinstance(seed, TodoItem):
            if seed.status not in TODO_STATUSES:
                raise RpcError(f"Unsupported todo status: {seed.status}")
            if not seed.content.strip():
                raise RpcError("Todo items must provide a non-empty 'content' value")
            return {"id": seed.id or next_task(), "content": seed.content, "status": seed.status,
                    "notes": seed.notes, "details": seed.details, "blocker": seed.blocker}
        if not isinstance(seed, Mapping):
            raise RpcError(f"Unsupported todo item: {seed!r}")
        content = seed.get("content")
        if not isinstance(content, str) or not content.strip():
            raise RpcError("Todo items must provide a non-empty 'content' value")
        raw_status = seed.get("status")
        if isinstance(raw_status, str):
            if raw_status not in TODO_STATUSES:
                raise RpcError(f"Unsupported todo status: {raw_status}")
            status = raw_status
        else:
            status = "pending"
        raw_id = seed.get("id")
        return {
            "id": raw_id if isinstance(raw_id, str) and raw_id else next_task(),
            "content": content,
            "status": status,
            "notes": opt(seed.get("notes")),
            "details": opt(seed.get("details")),
            "blocker": opt(seed.get("blocker")),
        }

    def is_phase(seed: object) -> bool:
        if isinstance(seed, TodoPhase):
            return True
        if not isinstance(seed, Mapping):
            return False
        return "tasks" in seed or ("name" in seed and "content" not in seed)

    def phase(seed: object, index: int) -> JsonObject:
        if isinstance(seed, TodoPhase):
            if not seed.name.strip():
                raise RpcError("Todo phases must provide a non-empty 'name' value")
            return {"id": seed.id or f"phase-{index}", "name": seed.name, "tasks": [item(t) for t in seed.tasks]}
        assert isinstance(seed, Mapping)
        name = seed.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RpcError("Todo phases must provide a non-empty 'name' value")
        raw_tasks = seed.get("tasks") or ()
        if not isinstance(raw_tasks, Iterable) or isinstance(raw_tasks, (str, bytes, Mapping)):
            raise RpcError("Todo phase 'tasks' must be a sequence")
        raw_id = seed.get("id")
        return {"id": raw_id if isinstance(raw_id, str) and raw_id else f"phase-{index}", "name": name,
                "tasks": [item(t) for t in raw_tasks]}

    if any(is_phase(t) for t in todos):
        phases = []
        for index, seed in enumerate(todos, start=1):
            if not is_phase(seed):
                raise RpcError("Cannot mix flat todo items with todo phases in one set_todos() call")
            phases.append(phase(seed, index))
        return phases
    return [{"id": "phase-1", "name": "Todos", "tasks": [item(t) for t in todos]}]
