"""The episode engine: many episodes in flight, in threads, processes or on a Ray cluster.

Every command that rolls episodes (``run``, ``collect``, ``evaluate``, ``bench``) hands the engine a
*job* and a list of *items* (episode keys). The job's ``slot()`` builds one in-flight slot — its own
environment and its own copy of the policy (environments are not thread-safe) — and returns a function
that plays one item to a picklable result. ``concurrency`` slots run as threads in each process (the
executor's requests release the GIL, so N slots keep N LLM requests in flight); ``workers`` processes
(local backend) or Ray tasks (``backend="ray"``) each run their share of the items.

An item's result depends only on the item (its seeds, task and policy) and the job, never on which
slot, thread or process plays it: results are handed to ``on_done`` in completion order, and callers
store them by item, so their output is identical for any concurrency, worker count and backend.

``Checkpoints`` is the per-episode resume directory the commands share: a manifest of the settings
that change the results (a resume with different settings is refused, naming the difference) and one
atomically written file per finished episode.
"""

from __future__ import annotations

import json
import os
import pickle
import queue
import shutil
import signal
import threading
import traceback
import uuid
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Protocol

BACKENDS = ("local", "ray")
ENV_RAY_ADDRESS = "RAY_ADDRESS"
_POLL_S = 0.1
"""How often the main thread wakes while waiting for results: bounds the reaction time to Ctrl-C."""


class EngineError(ValueError):
    """Engine settings that cannot work; the message names the setting."""


class ResumeError(ValueError):
    """A checkpoint directory was written with different settings than the ones given now."""


class Job(Protocol):
    """What the engine runs: picklable, so it travels to worker processes and Ray tasks."""

    def slot(self) -> Callable[[Any], Any]:
        """A fresh in-flight slot (own env, own policy copy): plays one item, returns its result."""
        ...


@dataclass(frozen=True)
class EngineConfig:
    """How episodes are scheduled; nothing here changes an episode's content."""

    concurrency: int = 1
    """Episodes in flight per process (threads)."""
    workers: int = 1
    """Processes (local backend) or Ray tasks (ray backend) sharing the items."""
    backend: str = "local"
    ray_address: str | None = None
    """Ray cluster to join (``ray.init(address=...)``); default ``$RAY_ADDRESS``, else a local instance."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise EngineError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.workers < 1:
            raise EngineError(f"workers must be at least 1, got {self.workers}")
        if self.backend not in BACKENDS:
            raise EngineError(f"unknown backend {self.backend!r}; expected one of {', '.join(BACKENDS)}")
        if self.ray_address is not None and self.backend != "ray":
            raise EngineError("a Ray address only applies with backend 'ray'")


def run(
    job: Job,
    items: Sequence[Any],
    on_done: Callable[[Any, Any], None],
    config: EngineConfig = EngineConfig(),
    group: Callable[[Any], Hashable] | None = None,
) -> None:
    """Play every item; ``on_done(item, result)`` runs in the calling thread as each one finishes.

    ``group`` keeps items of one group in one process (e.g. one task, so its verifier cache stays
    warm). The first failing episode's exception is raised after the others are stopped; so is a
    ``KeyboardInterrupt``, after worker threads stop taking items and worker processes are ended.
    """
    items = list(items)
    if not items:
        return
    if config.backend == "ray":
        _run_ray(job, items, on_done, config, group)
    elif config.workers == 1 or len(items) == 1:
        _run_threads_here(job, items, on_done, config.concurrency)
    else:
        _run_processes(job, items, on_done, config, group)


# -- threads ---------------------------------------------------------------------------------------
_END = object()


def portable(exc: BaseException) -> BaseException:
    """The exception itself if it pickles (so its type survives a process boundary), else its text."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        text = "".join(traceback.format_exception(exc))
        return RuntimeError(f"episode failed in a worker:\n{text}")
    return exc


def _start_threads(
    job: Job, items: Sequence[Any], concurrency: int, emit: Callable[[tuple], None], stop: threading.Event
) -> list[threading.Thread]:
    """``concurrency`` daemon threads pulling items; each emits ``("ok", item, result)`` or an error.

    Daemon threads: an interrupted run exits without waiting for the requests still in flight.
    """
    source: Iterator[Any] = iter(items)
    lock = threading.Lock()

    def work() -> None:
        try:
            play = job.slot()
            while not stop.is_set():
                with lock:
                    item = next(source, _END)
                if item is _END:
                    return
                emit(("ok", item, play(item)))
        except BaseException as exc:
            stop.set()
            emit(("error", None, portable(exc)))

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(concurrency, len(items)))]
    for thread in threads:
        thread.start()
    return threads


def _drain(
    inbox: queue.Queue,
    total: int,
    on_done: Callable[[Any, Any], None],
    check: Callable[[], None] = lambda: None,
) -> None:
    """Hand ``total`` results to ``on_done``; raise the first error. Wakes every ``_POLL_S`` for Ctrl-C."""
    received = 0
    while received < total:
        try:
            message = inbox.get(timeout=_POLL_S)
        except queue.Empty:
            check()
            continue
        kind, item, payload = message
        if kind == "error":
            raise payload
        if kind == "ok":
            received += 1
            on_done(item, payload)


def _run_threads_here(job: Job, items: list, on_done: Callable[[Any, Any], None], concurrency: int) -> None:
    inbox: queue.Queue = queue.Queue()
    stop = threading.Event()
    _start_threads(job, items, concurrency, inbox.put, stop)
    try:
        _drain(inbox, len(items), on_done)
    finally:
        stop.set()


# -- processes -------------------------------------------------------------------------------------
def _shares(items: list, workers: int, group: Callable[[Any], Hashable] | None) -> list[list]:
    """Items split into at most ``workers`` shares, whole groups each, largest groups placed first."""
    groups: dict[Hashable, list] = {}
    for position, item in enumerate(items):
        groups.setdefault(group(item) if group is not None else position, []).append(item)
    shares: list[list] = [[] for _ in range(min(workers, len(groups)))]
    for members in sorted(groups.values(), key=len, reverse=True):
        min(shares, key=len).extend(members)
    return [share for share in shares if share]


def _process_main(job: Job, items: list, concurrency: int, outbox: Any) -> None:
    """A worker process: Ctrl-C is the parent's to handle (it ends the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()
    for thread in _start_threads(job, items, concurrency, outbox.put, stop):
        thread.join()


def _run_processes(
    job: Job, items: list, on_done: Callable[[Any, Any], None], config: EngineConfig, group: Any
) -> None:
    import multiprocessing

    # the platform's default start method (fork on Linux) as before: spawn would need every script
    # that collects or evaluates to guard its body with `if __name__ == "__main__":`
    context = multiprocessing.get_context()
    outbox = context.Queue()
    processes = [
        context.Process(target=_process_main, args=(job, share, config.concurrency, outbox), daemon=True)
        for share in _shares(items, config.workers, group)
    ]
    for process in processes:
        process.start()

    def check() -> None:
        for process in processes:
            if process.exitcode not in (None, 0):
                raise RuntimeError(f"a worker process died (exit code {process.exitcode})")

    try:
        _drain(outbox, len(items), on_done, check)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=5)
        outbox.close()
        outbox.cancel_join_thread()


# -- ray -------------------------------------------------------------------------------------------
def _ray_share(job: Job, items: list, concurrency: int) -> Iterator[tuple]:
    """A Ray task: the same threads, its results streamed back one episode at a time."""
    inbox: queue.Queue = queue.Queue()
    stop = threading.Event()
    _start_threads(job, items, concurrency, inbox.put, stop)
    for _ in range(len(items)):
        message = inbox.get()
        yield message
        if message[0] == "error":
            return


def _run_ray(
    job: Job, items: list, on_done: Callable[[Any, Any], None], config: EngineConfig, group: Any
) -> None:
    try:
        import ray
    except ImportError:
        raise EngineError("backend 'ray' needs Ray: pip install 'harness-gym[ray]'") from None
    if not ray.is_initialized():
        address = config.ray_address or os.environ.get(ENV_RAY_ADDRESS) or None
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(_ray_share)
    streams = [
        remote.options(num_returns="streaming").remote(job, share, config.concurrency)
        for share in _shares(items, config.workers, group)
    ]
    inbox: queue.Queue = queue.Queue()

    def forward(stream: Any) -> None:
        try:
            for ref in stream:
                inbox.put(ray.get(ref))
        except BaseException as exc:
            inbox.put(("error", None, portable(exc)))

    forwarders = [threading.Thread(target=forward, args=(stream,), daemon=True) for stream in streams]
    for forwarder in forwarders:
        forwarder.start()
    try:
        _drain(inbox, len(items), on_done)
    except BaseException:
        for stream in streams:
            ray.cancel(stream, force=True)
        raise
    # Every stream ends when its task returns. Cancelling a task that is completing races inside Ray
    # 2.60 (a failed check aborts this process: "Tried to complete task that was not pending"), so tasks
    # that did their share are left to finish.
    for forwarder in forwarders:
        forwarder.join()


# -- checkpoints -----------------------------------------------------------------------------------
def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader (or a resume after SIGKILL) sees all of it or nothing."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def differences(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """``"name: <checkpoint> -> <now>"`` per setting that differs (nested keys joined by dots)."""
    old, new = _flat(found), _flat(wanted)
    return [
        f"{key}: {old.get(key, '<unset>')!r} -> {new.get(key, '<unset>')!r}"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]


def config_key(config: Any, neutral: Collection[str] = (), added: Collection[str] = ()) -> dict[str, Any]:
    """The resume key of a config dataclass, built from its fields so that a new field cannot be left out.

    Every field enters but the ``neutral`` ones (documented as never changing a result: scheduling, where
    output goes, display). A nested config enters by its own ``content_key``, another dataclass as a
    dict. A field in ``added`` (one added after keys were published, e.g. in datasets' metadata) enters
    only when it is not at its default, so every key of an earlier version stays what it was."""
    names = {f.name for f in fields(config)}
    unknown = sorted((set(neutral) | set(added)) - names)
    if unknown:
        raise TypeError(f"{type(config).__name__} has no field(s) {unknown}")
    key: dict[str, Any] = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if f.name in neutral or (f.name in added and value == f.default):
            continue
        if hasattr(value, "content_key"):
            value = value.content_key()
        elif is_dataclass(value) and not isinstance(value, type):
            value = asdict(value)
        key[f.name] = value
    return key


def check_manifest(directory: Path, wanted: Mapping[str, Any], what: str) -> None:
    """Create ``directory`` with ``wanted`` as its manifest, or refuse if it holds a different one."""
    manifest = directory / "manifest.json"
    wanted = json.loads(json.dumps(wanted, sort_keys=True, default=str))
    if manifest.exists():
        found = json.loads(manifest.read_text())
        changed = differences(found, wanted)
        if changed:
            raise ResumeError(
                f"cannot resume the interrupted {what} at {directory}: it was started with different "
                f"settings ({'; '.join(changed)}); rerun with the same settings, or delete {directory} "
                "to start again"
            )
        return
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(manifest, json.dumps(wanted, sort_keys=True, indent=1).encode())


class Checkpoints:
    """One JSON file per finished episode under ``directory``, behind a settings manifest."""

    def __init__(self, directory: str | os.PathLike, manifest: Mapping[str, Any], what: str) -> None:
        self.directory = Path(directory)
        check_manifest(self.directory, manifest, what)

    def _path(self, key: str) -> Path:
        return self.directory / f"episode-{key}.json"

    def load(self) -> dict[str, Any]:
        """Finished episodes by key."""
        return {
            path.stem.removeprefix("episode-"): json.loads(path.read_text())
            for path in self.directory.glob("episode-*.json")
        }

    def save(self, key: str, record: Any) -> None:
        write_atomic(self._path(key), json.dumps(record).encode())

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
