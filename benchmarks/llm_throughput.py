"""Episodes per second with a chat-LLM executor, against a loopback server of fixed latency.

An OpenAI-compatible server on 127.0.0.1 answers every request after ``--latency`` seconds (right or
flawed planning drafts, fixed per prompt; judges always PASS). The collection's episodes run on the
episode engine at each ``--concurrency``; the latency bound is ``concurrency / (calls per episode x
latency)`` episodes/s. Every run's episodes must equal the concurrency-1 run's, array for array.

Only the episode phase of a collection is timed (the engine's work); the Minari write and the
reference-score episodes are the same at any concurrency. Each concurrency plays ``16 x concurrency``
episodes (at least 24) so slot start-up and the last episode's tail weigh little; every run's first
episodes are compared with the concurrency-1 run's (episode ``i`` depends only on ``i``, not on the
total). The server runs in its own process, so its work does not compete with the engine's GIL.

    python benchmarks/llm_throughput.py [--latency 0.2] [--concurrency 1 8 64]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.datasets.collect import CollectConfig, CollectJob
from harness_gym.evaluation.engine import EngineConfig
from harness_gym.evaluation.engine import run as run_engine
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.executors.prompts import INSTRUCTION_HEADING, JUDGE_INSTRUCTION

ENV = "HarnessPlanning-v0"


def _serve(latency: float, port: Any, requests: Any, peak: Any) -> None:
    """The server process: its own interpreter, so its work never competes with the engine's GIL."""
    domain = gym.make(ENV, split="all").unwrapped
    tasks = domain.tasks
    lock = threading.Lock()
    in_flight = 0

    def reply(messages: list[dict]) -> str:
        content = messages[-1]["content"]
        if content.rsplit(f"{INSTRUCTION_HEADING}\n", 1)[-1].startswith(JUDGE_INSTRUCTION):
            return "PASS"
        task = next(t for t in tasks if t.prompt.strip() in content)
        pool = domain.domain.pool(task)
        right = int(hashlib.sha256(content.encode()).hexdigest(), 16) % 2
        return f"Sure, here is my answer.\n\n{pool.reference if right else pool.flawed[0].source}\n"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            nonlocal in_flight
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                requests.value += 1
                in_flight += 1
                peak.value = max(peak.value, in_flight)
            time.sleep(latency)
            text = reply(payload["messages"])
            with lock:
                in_flight -= 1
            usage = {"prompt_tokens": 100, "completion_tokens": 20}
            body = json.dumps({"choices": [{"message": {"content": text}}], "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ThreadingHTTPServer.request_queue_size = 512
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port.value = httpd.server_address[1]
    httpd.serve_forever()


class LoopbackServer:
    """A fixed-latency OpenAI-compatible server in a child process; counts requests and peak load."""

    def __init__(self, latency: float) -> None:
        context = multiprocessing.get_context("spawn")
        port = context.Value("i", 0)
        self._requests, self._peak = context.Value("q", 0), context.Value("i", 0)
        self.process = context.Process(
            target=_serve, args=(latency, port, self._requests, self._peak), daemon=True
        )
        self.process.start()
        while port.value == 0:
            time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{port.value}/v1"

    @property
    def requests(self) -> int:
        return int(self._requests.value)

    @property
    def peak(self) -> int:
        return int(self._peak.value)

    def reset_peak(self) -> None:
        self._peak.value = 0


def play(server: LoopbackServer, episodes: int, concurrency: int) -> tuple[float, list[dict], int]:
    """Seconds, the episodes' arrays (by index) and the requests made for them.

    The client's per-process bound (``max_concurrency``) is set to the concurrency, as the command
    line does when ``--max-concurrency`` is not given.
    """
    executor = OpenAIConfig(model="loopback", base_url=server.base_url, max_concurrency=concurrency)
    config = CollectConfig(ENV, "mixed", episodes, "harness/planning/llm-throughput-v0", executor=executor)
    arrays: dict[int, dict] = {}
    before = server.requests
    engine = EngineConfig(concurrency=concurrency)
    start = time.perf_counter()
    run_engine(CollectJob(config), range(episodes), arrays.__setitem__, engine)
    seconds = time.perf_counter() - start
    return seconds, [arrays[i] for i in range(episodes)], server.requests - before


def same(a: list[dict], b: list[dict]) -> bool:
    """Episodes equal in every array the dataset keeps (the usage totals and ``audit/`` arrays, with the
    measured latency, depend on scheduling and stay out of datasets)."""

    def kept(x: dict) -> dict:
        return {k: v for k, v in x.items() if k != "usage" and not k.startswith("audit/")}

    return len(a) == len(b) and all(
        kept(x).keys() == kept(y).keys()
        and all(np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f") for k in kept(x))
        for x, y in zip(a, b, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--concurrency", nargs="+", type=int, default=[1, 8, 64])
    parser.add_argument("--episodes-per-slot", type=int, default=16, help="episodes = this x concurrency")
    parser.add_argument("--min-episodes", type=int, default=24)
    args = parser.parse_args()
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        os.environ.pop(var, None)
    server = LoopbackServer(args.latency)
    print(f"{ENV}, {args.latency * 1000:.0f} ms/request, {os.cpu_count()} CPUs, v{harness_gym.__version__}")
    head = ("concurrency", "episodes", "calls/ep", "peak", "ep/s", "bound", "of bound")
    print("{:>11} {:>8} {:>8} {:>5} {:>7} {:>7} {:>8}  same as concurrency 1".format(*head))
    reference: list[dict] | None = None
    for concurrency in args.concurrency:
        n = max(args.min_episodes, args.episodes_per_slot * concurrency)
        server.reset_peak()
        seconds, arrays, calls = play(server, n, concurrency)
        if reference is None:
            reference = arrays
        k = min(len(reference), len(arrays))
        identical = same(reference[:k], arrays[:k])
        per_episode = calls / n
        rate = n / seconds
        bound = concurrency / (per_episode * args.latency)
        print(
            f"{concurrency:>11} {n:>8} {per_episode:>8.1f} {server.peak:>5} {rate:>7.2f} {bound:>7.2f} "
            f"{rate / bound:>8.0%}  {'yes' if identical else 'NO'} (first {k} episodes)"
        )


if __name__ == "__main__":
    main()
