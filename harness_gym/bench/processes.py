"""Each setting of a bench in a fresh process of its own, at most ``workers`` at once.

A fresh process keeps one setting's caches and models out of the next one's memory. A process that ends
without reporting (a signal, the OOM killer, an abort inside a native library such as Ray's core) is an
error that names its setting: ``multiprocessing.Pool`` would wait for its result forever.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from harness_gym.evaluation.engine import portable

_POLL_S = 0.1

Report = Callable[[int], None]
"""Called in a setting process with a number of finished episodes (the parent's progress bar)."""


class SettingProcessDied(RuntimeError):
    """A setting's process ended without a result or an error."""


def _child(target: Callable[[str, Report], Any], key: str, outbox: Any) -> None:
    # Ctrl-C is the parent's to handle: it ends every setting process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = target(key, lambda episodes: outbox.put(("progress", key, episodes)))
    except BaseException as exc:
        outbox.put(("error", key, (portable(exc), traceback.format_exc())))
    else:
        outbox.put(("ok", key, result))


def _how(exitcode: int) -> str:
    if exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exit status {exitcode}"


def _messages(outbox: Any) -> Iterator[tuple[str, str, Any]]:
    """What is in ``outbox`` now, after waiting up to ``_POLL_S`` for the first message."""
    try:
        yield outbox.get(timeout=_POLL_S)
        while True:
            yield outbox.get_nowait()
    except queue.Empty:
        return


def run_each(
    target: Callable[[str, Report], Any],
    keys: Sequence[str],
    workers: int,
    on_result: Callable[[str, Any], None],
    on_progress: Report = lambda episodes: None,
) -> None:
    """``target(key, report)`` for every key, each in a fresh process; ``on_result(key, result)`` here.

    The first error raised in a setting process is raised here (its traceback as the cause), and a
    process that dies is a ``SettingProcessDied``; either way the other setting processes are ended.
    Processes are forked (the platform default on Linux), so they inherit what the parent imported.
    """
    context = multiprocessing.get_context()
    outbox = context.Queue()
    waiting = list(keys)
    running: dict[str, Any] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                key = waiting.pop(0)
                running[key] = context.Process(target=_child, args=(target, key, outbox), daemon=True)
                running[key].start()
            # a process that has ended put its message in the pipe before it ended: once the messages
            # read below are handled, one of these still running never sent one
            ended = [key for key, process in running.items() if process.exitcode is not None]
            for kind, key, payload in _messages(outbox):
                if kind == "progress":
                    on_progress(payload)
                elif kind == "error":
                    error, text = payload
                    raise error from RuntimeError(f"in the process of {key}:\n{text}")
                else:
                    running.pop(key).join()
                    on_result(key, payload)
            for key in ended:
                if key in running:
                    raise SettingProcessDied(
                        f"{key}: its process ended ({_how(running[key].exitcode)}) without a result; "
                        "a rerun with the same configuration resumes from its checkpoints"
                    )
    finally:
        for process in running.values():
            if process.is_alive():
                process.terminate()
        for process in running.values():
            process.join(timeout=5)
        outbox.close()
        outbox.cancel_join_thread()
