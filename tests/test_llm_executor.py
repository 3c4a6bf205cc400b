"""OpenAIExecutor end to end: real HTTP to an OpenAI-compatible server on loopback, scripted replies."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np
import pytest
from conftest import require

import harness_gym
from harness_gym.core.actions import Action
from harness_gym.executors import (
    CacheMissError,
    Context,
    ExecutorRequest,
    LLMError,
    OpenAIConfig,
    OpenAIExecutor,
)
from harness_gym.executors.prompts import INSTRUCTION_HEADING, JUDGE_INSTRUCTION


@dataclass(frozen=True)
class Reply:
    """A scripted reply with more than text: a finish_reason, or an HTTP error status."""

    text: str
    finish_reason: str = "stop"
    status: int = 200


Responder = Callable[[dict], "str | Reply"]
"""Request body (model, messages, temperature, seed, ...) -> reply text."""


class ChatServer:
    """``/v1/chat/completions`` on 127.0.0.1 whose reply text comes from ``respond(request body)``."""

    def __init__(self, respond: Responder, usage: dict[str, int] | None = None) -> None:
        self.respond = respond
        self.usage = usage or {"prompt_tokens": 100, "completion_tokens": 20}
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(payload)
                text = server.respond(payload)
                status, finish = 200, "stop"
                if isinstance(text, Reply):
                    text, status, finish = text.text, text.status, text.finish_reason
                choice = {"message": {"role": "assistant", "content": text}, "finish_reason": finish}
                body = json.dumps({"choices": [choice], "usage": server.usage}).encode()
                if status != 200:
                    body = json.dumps({"error": {"message": text}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.daemon = True
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


pytestmark = pytest.mark.usefixtures("loopback_llm_env")


@pytest.fixture
def serve() -> Iterator[Callable[..., ChatServer]]:
    servers: list[ChatServer] = []

    def start(respond: Responder, **kwargs) -> ChatServer:
        servers.append(ChatServer(respond, **kwargs))
        return servers[-1]

    yield start
    for srv in servers:
        srv.close()


def kind_of(messages: list[dict[str, str]]) -> str:
    """Which request a message list is, from the instruction the prompts end with."""
    turn = messages[-1]["content"].rsplit(f"{INSTRUCTION_HEADING}\n", 1)[1]
    if turn.startswith(JUDGE_INSTRUCTION):
        return "judge"
    if "## Current draft" in messages[-1]["content"]:
        return "revise"
    return "tool" if "tool call" in turn.lower() else "draft"


def wrap(env_id: str, artifact: str) -> str:
    """A reply the way a chat model writes it: chatter around the artifact in the setting's usual form."""
    if env_id == "HarnessCoding-v0":
        return f"Here is an implementation:\n\n```python\n{artifact}```\n\nIt handles the edge cases."
    if env_id == "HarnessDBBench-v0":
        return f"The statement:\n```sql\n{artifact}\n```"
    if env_id == "HarnessTauRetail-v0":
        return f"Plan of tool calls:\n```json\n{artifact}\n```\nThis resolves the request."
    return f"Sure, here is my answer.\n\n{artifact}\n"


GARBLED = "I'm sorry, I am not able to help with that request."


class Scripted:
    """Replies for one env: the reference artifact for drafts/revisions, the gold call for tools."""

    def __init__(self, env: gym.Env, draft: Callable[[], str] | None = None) -> None:
        self.env = env.unwrapped
        self.draft = draft or (lambda: wrap(self.env.domain.env_id, self.reference()))

    def reference(self) -> str:
        return self.env.domain.pool(self.env._ep.task).reference

    def __call__(self, payload: dict) -> str:
        kind = kind_of(payload["messages"])
        if kind == "judge":
            return "PASS"
        if kind == "tool":
            ep = self.env._ep
            call = self.env.domain.tool_pool(ep.task, ep.context).reference
            return f"Next I will run:\n```json\n{call}\n```"
        return self.draft()


def make_env(env_id: str, base_url: str, **settings) -> gym.Env:
    settings = {"model": "scripted-model", **settings}
    config = OpenAIConfig(base_url=base_url, max_retries=0, **settings)
    return gym.make(env_id, split="eval", executor=config, strict=True)


def gather_then_draft(env: gym.Env, seed: int, task_id: str) -> tuple[float, dict]:
    """OBSERVE, then RETRIEVE / CALL_TOOL until the executor is fully informed, DRAFT, SUBMIT."""
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    inner = env.unwrapped
    for action in (Action.OBSERVE, Action.RETRIEVE, Action.CALL_TOOL, Action.RETRIEVE, Action.CALL_TOOL):
        while (
            info["action_mask"][action]
            and inner.domain.informedness(inner._ep.task, inner._ep.context) < 1
            and inner._ep.state.t < inner.max_steps - 2
        ):
            _, _, _, _, info = env.step(int(action))
            if action == Action.OBSERVE:
                break
    _, _, _, _, info = env.step(int(Action.DRAFT))
    _, reward, terminated, _, info = env.step(int(Action.SUBMIT))
    assert terminated
    return reward, info


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_reference_reply_scores_one_and_garbled_reply_is_a_failure_signal(env_id, serve):
    env = gym.make(env_id, split="eval")  # only to pick tasks
    task_ids = [task.task_id for task in env.unwrapped.tasks]
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url)
    srv.respond = Scripted(env)
    for task_id in task_ids:
        reward, info = gather_then_draft(env, seed=0, task_id=task_id)
        assert reward == pytest.approx(1.0), (task_id, info["rubric"])
        assert info["usage"]["executor_calls"] >= 1

    srv.respond = Scripted(env, draft=lambda: GARBLED)
    _, info = env.reset(seed=1, options={"task_id": task_ids[0]})
    _, _, _, _, info = env.step(int(Action.DRAFT))
    record = env.unwrapped._ep.steps[-1]
    assert record["failure"] is True
    assert record["text"].startswith("executor error: parse failure")
    assert record["draft_hash"] is None
    assert not info["action_mask"][Action.CHECK], "a parse failure must not leave a draft behind"
    _, reward, _, _, info = env.step(int(Action.SUBMIT))
    assert reward == 0.0
    assert env.unwrapped.executor.stats()["parse_failures"] == 1


def test_garbled_judge_reply_is_a_check_issue(serve):
    env_id = "HarnessResearch-v0"
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url)
    scripted = Scripted(env)
    srv.respond = lambda payload: (
        "Hmm, hard to say." if kind_of(payload["messages"]) == "judge" else scripted(payload)
    )
    task_id = env.unwrapped.tasks[0].task_id
    env.reset(seed=0, options={"task_id": task_id})
    env.step(int(Action.DRAFT))
    env.step(int(Action.CHECK))
    issues = env.unwrapped._ep.steps[-1]["issues"]
    assert any(issue.startswith("judge error: parse failure") for issue in issues), issues


def sampled_replies(env: gym.Env) -> Responder:
    """A sampling model: what comes back depends on the request's seed (sometimes garbled, judges vary)."""
    scripted = Scripted(env)

    def respond(payload: dict) -> str:
        rng = np.random.default_rng(payload["seed"])
        if kind_of(payload["messages"]) == "judge":
            return "PASS" if rng.random() < 0.5 else "FAIL: the answer cites the wrong document"
        return GARBLED if rng.random() < 0.4 else scripted(payload)

    return respond


def run_random(env: gym.Env, seed: int, task_id: str) -> tuple[list[dict], float, dict]:
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    rng = np.random.default_rng(seed)
    while True:
        legal = np.flatnonzero(info["action_mask"])
        if rng.random() < 0.9 and len(legal) > 1:  # mostly keep going: more executor calls to replay
            legal = legal[legal != Action.SUBMIT]
        _, reward, terminated, truncated, info = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            return info["trajectory"]["steps"], reward, info


def test_record_then_replay_with_the_server_stopped_is_identical(serve, tmp_path):
    cache = tmp_path / "responses.sqlite"
    env_id = "HarnessResearch-v0"
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url, temperature=0.8, cache=str(cache), cache_mode="record")
    srv.respond = sampled_replies(env)
    task_ids = [task.task_id for task in env.unwrapped.tasks][:4]
    recorded = [run_random(env, seed, task_id) for seed, task_id in enumerate(task_ids)]
    calls = sum(info["usage"]["executor_calls"] for _, _, info in recorded)
    assert calls > 8 and len(srv.requests) == calls
    assert len({r["seed"] for r in srv.requests}) > 1, "temperature > 0: every call samples anew"
    assert any(s["failure"] for steps, _, _ in recorded for s in steps), "the script should garble some"
    assert {reward for _, reward, _ in recorded} != {0.0}
    srv.close()

    replay = make_env(env_id, srv.base_url, temperature=0.8, cache=str(cache), cache_mode="replay")
    replayed = [run_random(replay, seed, task_id) for seed, task_id in enumerate(task_ids)]

    def without_cache_flags(steps):  # a replayed call is a cache hit, costing no time; all else is the same
        spent = {"cached": None, "latency_s": None}
        return [
            {**s, "usage": {**s["usage"], **spent}, "executor_io": {**s["executor_io"], **spent}}
            if "usage" in s
            else s
            for s in steps
        ]

    for (steps, reward, info), (steps2, reward2, info2) in zip(recorded, replayed, strict=True):
        assert without_cache_flags(steps2) == without_cache_flags(steps)
        assert all(s["usage"]["cached"] == 0 for s in steps if "usage" in s)
        assert all(s["usage"]["cached"] == s["usage"]["calls"] for s in steps2 if "usage" in s)
        assert all(s["executor_io"]["cached"] is False for s in steps if "executor_io" in s)
        assert all(s["executor_io"]["latency_s"] > 0 for s in steps if "executor_io" in s)  # measured
        assert all(s["executor_io"]["latency_s"] == 0 for s in steps2 if "executor_io" in s)  # not sent
        assert reward2 == reward
        assert info2["rubric"] == info["rubric"]
        assert info2["usage"]["prompt_tokens"] == info["usage"]["prompt_tokens"]
        assert info2["usage"]["cache_hits"] == info2["usage"]["executor_calls"]
        assert info["usage"]["cache_misses"] == info["usage"]["executor_calls"]
    stats = replay.unwrapped.executor.stats()
    assert stats["api_calls"] == 0 and stats["cache_hits"] == calls

    # an episode the cache never saw: replay refuses to call the model
    with pytest.raises(CacheMissError, match="read_only"):
        run_random(replay, 99, task_ids[0])
    # and without a cache the stopped endpoint is a clear error, not a silent failure signal
    down = make_env(env_id, srv.base_url)
    with pytest.raises(LLMError, match="failed after 1 attempt"):
        gather_then_draft(down, 0, task_ids[0])


def test_usage_and_cost_reach_the_episode_info(serve):
    srv = serve(lambda messages: "", usage={"prompt_tokens": 1000, "completion_tokens": 500})
    env = make_env("HarnessPlanning-v0", srv.base_url, price_in=500.0, price_out=2000.0)  # USD / 1M tokens
    srv.respond = Scripted(env)
    reward, info = gather_then_draft(env, seed=0, task_id=env.unwrapped.tasks[0].task_id)
    usage = info["usage"]
    assert reward == pytest.approx(1.0)
    assert usage["executor_calls"] == 1
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (1000, 500)
    assert usage["cost_usd"] == pytest.approx(0.5 + 1.0)
    assert usage["cache_hits"] == usage["cache_misses"] == 0  # no cache configured
    request = srv.requests[0]
    assert request["model"] == "scripted-model" and request["temperature"] == 0.0
    assert "seed" not in request  # greedy decoding: calls with equal messages share cache entries


def test_unbound_executor_and_bad_settings_are_named():
    executor = OpenAIExecutor(model="m", base_url="http://127.0.0.1:9/v1")
    task = gym.make("HarnessPlanning-v0").unwrapped.tasks[0]
    with pytest.raises(RuntimeError, match="not bound to a domain"):
        executor.complete(ExecutorRequest("draft", task, Context()), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown cache mode 'fast'"):
        OpenAIConfig(cache_mode="fast")
    with pytest.raises(ValueError, match="needs a cache file"):
        OpenAIConfig(cache_mode="replay")
    with pytest.raises(LLMError, match=r"missing .*model"):
        gym.make("HarnessPlanning-v0", executor="openai")


def test_executor_pickles_for_worker_processes(serve):
    import pickle

    srv = serve(lambda payload: "")
    executor = OpenAIExecutor(model="m", base_url=srv.base_url)
    env = gym.make("HarnessPlanning-v0", split="eval", executor=executor)
    srv.respond = Scripted(env)
    clone = pickle.loads(pickle.dumps(env.unwrapped.executor))
    task = env.unwrapped.tasks[0]
    env.reset(seed=0, options={"task_id": task.task_id})
    request = ExecutorRequest("judge", task, Context(), draft="move(a, b)")
    response = clone.complete(request, np.random.default_rng(0))
    assert response.text == "PASS" and response.error is None


def test_cli_run_records_then_replays_offline(serve, tmp_path, capsys):
    from harness_gym.cli.main import main

    env_id = "HarnessPlanning-v0"
    cache = tmp_path / "cli.sqlite"

    def reference_for(payload: dict) -> str:
        prompt = payload["messages"][-1]["content"]
        task = next(t for t in tasks if t.prompt.strip() in prompt)
        return (
            "PASS" if kind_of(payload["messages"]) == "judge" else wrap(env_id, domain.pool(task).reference)
        )

    probe = gym.make(env_id, split="eval").unwrapped
    tasks, domain = probe.tasks, probe.domain
    srv = serve(reference_for)
    args = ["run", "--env", env_id, "--episodes", "3", "--executor", "openai", "--model", "m"]
    args += ["--base-url", srv.base_url, "--cache", str(cache)]
    assert main(args) == 0
    recorded = capsys.readouterr().out
    assert "mean G        1.000" in recorded
    assert "3 calls" in recorded and "0 hits, 3 misses" in recorded
    srv.close()

    assert main([*args, "--cache-mode", "replay"]) == 0
    replayed = capsys.readouterr().out
    assert "3 hits, 0 misses" in replayed
    strip = [line for line in recorded.splitlines() if not line.startswith("executor ")]
    assert strip == [line for line in replayed.splitlines() if not line.startswith("executor ")]


def test_cli_rejects_llm_flags_without_the_openai_executor():
    from harness_gym.cli.main import main

    with pytest.raises(SystemExit, match="--model only apply with --executor openai"):
        main(["run", "--env", "HarnessPlanning-v0", "--model", "m"])
    with pytest.raises(SystemExit, match="needs --model and --base-url"):
        main(["run", "--env", "HarnessPlanning-v0", "--executor", "openai"])


def planning_replies(payload: dict) -> str:
    """Half the drafts right, half flawed (fixed per prompt); judges always pass: for a bench run."""
    if kind_of(payload["messages"]) == "judge":
        return "PASS"
    prompt = payload["messages"][-1]["content"]
    task = next(t for t in _PLANNING.tasks if t.prompt.strip() in prompt)
    pool = _PLANNING.domain.pool(task)
    key = f"{prompt}|{payload.get('seed')}"  # sampling (temperature > 0) sends a seed per call
    right = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2
    return wrap("HarnessPlanning-v0", pool.reference if right else pool.flawed[0].source)


_PLANNING = gym.make("HarnessPlanning-v0", split="all").unwrapped


def test_parallel_collection_records_and_a_replay_rebuilds_the_same_dataset(serve, tmp_path):
    require("minari")
    import minari

    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.executors import ResponseCache

    srv = serve(planning_replies)
    cache = tmp_path / "collect.sqlite"
    config = OpenAIConfig(model="scripted-model", base_url=srv.base_url, temperature=0.7, cache=str(cache))

    def run(dataset_id: str, executor: OpenAIConfig, workers: int):
        return collect(
            CollectConfig(
                "HarnessPlanning-v0",
                "mixed",
                12,
                dataset_id,
                split="eval",
                executor=executor,
                workers=workers,
                root=str(tmp_path / "datasets"),
                show_progress=False,
            )
        )

    recorded = run("harness/planning/llm-v0", config, workers=2)  # two processes, one cache file
    assert recorded.usage["executor_calls"] > 0
    assert recorded.usage["cache_misses"] == recorded.usage["executor_calls"]
    srv.close()
    replay = replace(config, cache_mode="replay")
    replayed = run("harness/planning/llm-replay-v0", replay, workers=1)
    assert replayed.usage["cache_hits"] == recorded.usage["executor_calls"]
    assert replayed.stats == recorded.stats

    first, second = (minari.load_dataset(r.path) for r in (recorded, replayed))
    for a, b in zip(first.iterate_episodes(), second.iterate_episodes(), strict=True):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
    meta = first.storage.metadata
    executor = json.loads(meta["harness_executor"])
    assert executor["name"] == "openai" and executor["model"] == "scripted-model"
    assert executor["base_url"] == srv.base_url and executor["temperature"] == 0.7
    assert executor["cache_hash"] == ResponseCache(cache, "read_only").content_hash()
    assert json.loads(meta["harness_config"])["executor"]["model"] == "scripted-model"
    assert "api_key" not in meta["harness_executor"]


def test_cli_evaluate_on_the_llm(serve, capsys):
    from harness_gym.cli.main import main

    srv = serve(planning_replies)
    args = ["evaluate", "--env", "HarnessPlanning-v0", "--policy", "base", "--executor", "openai"]
    assert main([*args, "--model", "m", "--base-url", srv.base_url]) == 0
    out = capsys.readouterr().out
    assert "episodes=180" in out
    assert "executor m: 180 requests, 180 endpoint calls, 0 parse failures" in out


def test_cli_bench_on_the_llm_replays_to_the_same_results(serve, tmp_path, capsys):
    require("d3rlpy")
    from harness_gym.cli.main import main
    from harness_gym.evaluation.spend import calls_of

    srv = serve(planning_replies)
    cache = tmp_path / "bench.sqlite"
    args = ["bench", "--quick", "--settings", "HarnessPlanning-v0", "--quiet", "--executor", "openai"]
    args += ["--model", "m", "--base-url", srv.base_url, "--cache", str(cache)]
    assert main([*args, "--out", str(tmp_path / "recorded")]) == 0
    assert "executor calls" in capsys.readouterr().out
    srv.close()
    assert main([*args, "--out", str(tmp_path / "replayed"), "--cache-mode", "replay"]) == 0

    def load(name: str) -> dict:
        return json.loads((tmp_path / name / "results.json").read_text())["settings"]["HarnessPlanning-v0"]

    recorded, replayed = load("recorded"), load("replayed")
    assert recorded["executor"]["evaluate"]["api_calls"] > 0
    # every evaluation call is audited and counted, the state-dependence references' (expert, open-loop) too
    lines = (tmp_path / "recorded" / "episodes" / "HarnessPlanning-v0.jsonl").read_text().splitlines()
    calls = {}
    for record in map(json.loads, lines):
        calls[record["policy"]] = calls.get(record["policy"], 0) + len(calls_of(record["step_records"]))
    assert calls["expert"] > 0 and calls["open-loop"] > 0
    assert recorded["executor"]["evaluate"]["calls"] == sum(calls.values())
    assert replayed["executor"]["evaluate"]["api_calls"] == 0
    assert replayed["executor"]["evaluate"]["cache_misses"] == 0
    assert replayed["compare"] == recorded["compare"]
    assert replayed["buffer"] == recorded["buffer"]


# -- the real-LLM path audited: truncation, feedback hygiene, audit trail, replay misses ---------------


def test_a_truncated_reply_is_an_executor_error_never_an_artifact(serve, tmp_path):
    env_id = "HarnessCoding-v0"
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url, cache=str(tmp_path / "c.sqlite"))
    scripted = Scripted(env)
    srv.respond = lambda payload: Reply(scripted(payload), finish_reason="length")  # parsable, but cut
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.DRAFT))
    record = env.unwrapped._ep.steps[-1]
    assert record["text"].startswith("executor error: truncated reply")
    assert record["draft_hash"] is None
    assert record["executor_io"]["finish_reason"] == "length"
    assert env.unwrapped.executor.stats()["truncations"] == 1
    _, _, _, _, info = env.step(int(Action.SUBMIT))
    assert info["usage"]["truncations"] == 1 and info["usage"]["parse_failures"] == 0
    # the cache row keeps the finish_reason: a replay is a truncation too
    cache = env.unwrapped.executor.cache
    [key] = cache.keys()
    assert cache._lookup(key).finish_reason == "length"


@pytest.mark.parametrize(("prompt_tokens", "overflow"), [(900, False), (1500, True)])
def test_a_prompt_that_leaves_no_room_for_max_tokens_is_a_truncated_reply(serve, prompt_tokens, overflow):
    # a server that cuts an over-long prompt silently still answers, finish_reason "stop"; the usage it
    # reports is what the context_tokens rule checks
    env_id = "HarnessCoding-v0"
    srv = serve(lambda payload: "", usage={"prompt_tokens": prompt_tokens, "completion_tokens": 20})
    env = make_env(env_id, srv.base_url, max_tokens=100, context_tokens=1000)
    srv.respond = Scripted(env)
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.DRAFT))
    record = env.unwrapped._ep.steps[-1]
    assert (record["draft_hash"] is None) == overflow
    if overflow:
        assert record["text"].startswith("executor error: truncated reply")
        assert "1000-token context" in record["text"] and "1500 tokens" in record["text"]
    assert env.unwrapped.executor.stats()["truncations"] == int(overflow)
    assert OpenAIConfig(context_tokens=4096).content_key()["context_tokens"] == 4096
    assert "context_tokens" not in OpenAIConfig().content_key()
    with pytest.raises(ValueError, match="must exceed max_tokens"):
        OpenAIConfig(max_tokens=1000, context_tokens=1000)


def test_harness_errors_never_reach_the_model_as_feedback(serve):
    env_id = "HarnessResearch-v0"
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url)
    scripted = Scripted(env)
    srv.respond = lambda payload: (
        "Hmm, hard to say." if kind_of(payload["messages"]) == "judge" else scripted(payload)
    )
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.DRAFT))
    env.step(int(Action.CHECK))  # the judge reply does not parse: a harness error
    assert any("judge error" in issue for issue in env.unwrapped._ep.steps[-1]["issues"])
    env.step(int(Action.REVISE))
    revise_prompt = srv.requests[-1]["messages"][-1]["content"]
    assert "judge error" not in revise_prompt and "parse failure" not in revise_prompt


def test_a_failed_tool_call_parse_is_not_shown_as_a_tool_result(serve):
    env_id = "HarnessMultiTool-v0"
    srv = serve(lambda payload: "I would rather not call a tool.")
    env = make_env(env_id, srv.base_url)
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.CALL_TOOL))
    assert "executor error" in env.unwrapped._ep.steps[-1]["text"]
    env.step(int(Action.DRAFT))
    draft_prompt = srv.requests[-1]["messages"][-1]["content"]
    assert "executor error" not in draft_prompt and "## Tool results so far" not in draft_prompt


def test_step_records_and_the_cache_keep_the_request_and_reply(serve, tmp_path):
    env_id = "HarnessPlanning-v0"
    srv = serve(lambda payload: "")
    env = make_env(env_id, srv.base_url, cache=str(tmp_path / "c.sqlite"))
    srv.respond = Scripted(env)
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.OBSERVE))
    env.step(int(Action.DRAFT))
    _, _, _, _, info = env.step(int(Action.SUBMIT))
    steps = info["trajectory"]["steps"]
    assert "executor_io" not in steps[0]  # OBSERVE calls no executor
    io = steps[1]["executor_io"]
    assert set(io) >= {"messages", "reply", "finish_reason", "cache_key", "error"}
    assert set(io) == {
        *("messages", "reply", "reasoning_content", "finish_reason", "model", "cache_key", "cached"),
        *("latency_s", "prompt_tokens", "completion_tokens", "cost_usd", "error"),
    }
    assert (io["model"], io["cached"], io["prompt_tokens"], io["completion_tokens"]) == (
        "scripted-model",
        False,
        100,
        20,
    )
    assert io["messages"] == srv.requests[-1]["messages"] and io["error"] is None
    assert io["finish_reason"] == "stop"
    json.dumps(io)  # plain JSON for datasets and the viewer
    stored = env.unwrapped.executor.cache.request(io["cache_key"])
    assert stored["messages"] == io["messages"] and stored["base_url"] == srv.base_url


def test_equal_prompts_share_one_cache_entry_at_temperature_zero(serve, tmp_path):
    env_id = "HarnessCoding-v0"
    srv = serve(lambda payload: GARBLED)
    env = make_env(env_id, srv.base_url, cache=str(tmp_path / "c.sqlite"))
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.DRAFT))
    env.step(int(Action.DRAFT))  # the same request again: a cache hit, no second endpoint call
    assert len(srv.requests) == 1
    assert env.unwrapped.executor.stats()["cache_hits"] == 1


def test_a_moved_base_url_replays_and_a_replay_miss_names_the_changed_sampling(serve, tmp_path):
    env_id = "HarnessPlanning-v0"
    srv = serve(lambda payload: "")
    cache = str(tmp_path / "c.sqlite")
    env = make_env(env_id, srv.base_url, cache=cache)
    srv.respond = Scripted(env)
    task_id = env.unwrapped.tasks[0].task_id
    env.reset(seed=0, options={"task_id": task_id})
    env.step(int(Action.DRAFT))
    # the endpoint's URL is no part of the key: the same model behind another URL replays the recording
    moved = make_env(env_id, "http://127.0.0.1:9/v1", cache=cache, cache_mode="replay")
    moved.reset(seed=0, options={"task_id": task_id})
    moved.step(int(Action.DRAFT))
    assert moved.unwrapped._ep.steps[-1]["executor_io"]["cached"] is True
    other_model = make_env(env_id, srv.base_url, cache=cache, cache_mode="replay", model="other")
    other_model.reset(seed=0, options={"task_id": task_id})
    with pytest.raises(CacheMissError, match=r"model 'other' \(recorded: 'scripted-model'\)"):
        other_model.step(int(Action.DRAFT))
    hotter = make_env(env_id, srv.base_url, cache=cache, cache_mode="replay", max_tokens=64)
    hotter.reset(seed=0, options={"task_id": task_id})
    with pytest.raises(CacheMissError, match=r"max_tokens 64 \(recorded: 1024\)"):
        hotter.step(int(Action.DRAFT))


def test_fold_system_sends_no_system_message(serve):
    srv = serve(lambda payload: "")
    env = make_env("HarnessPlanning-v0", srv.base_url, fold_system=True)
    srv.respond = Scripted(env)
    env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
    env.step(int(Action.DRAFT))
    messages = srv.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert messages[0]["content"].startswith("You are the executor inside an agent harness.")


def test_base_stops_redrafting_after_repeated_parse_failures(serve):
    from harness_gym.envs.domain import BASE_MAX_ERRORS
    from harness_gym.evaluation.rollout import run_episode
    from harness_gym.policies.scripted import make_policy

    srv = serve(lambda payload: GARBLED)
    env = make_env("HarnessCoding-v0", srv.base_url, cache_mode="off")
    info = run_episode(env, make_policy("base", "HarnessCoding-v0"), seed=0)
    actions = [s["action"] for s in info["trajectory"]["steps"]]
    assert actions.count("DRAFT") == BASE_MAX_ERRORS and actions[-1] == "SUBMIT"
    assert info["termination_reason"] == "submit" and info["G"] == 0.0


def test_cli_run_ends_on_an_endpoint_error_with_one_line_and_the_finished_summary(serve, capsys):
    from harness_gym.cli.main import main

    env_id = "HarnessPlanning-v0"
    probe = gym.make(env_id, split="eval").unwrapped
    calls = []

    def respond(payload: dict) -> str | Reply:
        calls.append(1)
        if len(calls) > 1:
            return Reply("unsupported parameter: 'logit_bias'", status=400)
        task = next(t for t in probe.tasks if t.prompt.strip() in payload["messages"][-1]["content"])
        return wrap(env_id, probe.domain.pool(task).reference)

    srv = serve(respond)
    args = ["run", "--env", env_id, "--episodes", "3", "--executor", "openai", "--model", "m"]
    with pytest.raises(SystemExit) as stop:
        main([*args, "--base-url", srv.base_url])
    message = str(stop.value)
    assert "\n" not in message and "episode 2/3" in message and "HTTP 400" in message
    assert "logit_bias" in message
    out = capsys.readouterr().out
    assert "summary of the 1 finished episode(s)" in out and "mean G        1.000" in out


def test_cli_fold_system_flag(serve, capsys):
    from harness_gym.cli.main import main

    srv = serve(lambda payload: "1. nothing")
    args = ["run", "--env", "HarnessPlanning-v0", "--episodes", "1", "--executor", "openai", "--model", "m"]
    assert main([*args, "--base-url", srv.base_url, "--fold-system"]) == 0
    assert srv.requests and all(m["role"] != "system" for r in srv.requests for m in r["messages"])
    assert "parse failures" in capsys.readouterr().out


# -- replies of every shape, structured output, sampling, settings files, spend, audit ---------------


class Raw:
    """A scripted reply given as the whole ``choices[0]`` (or ``None``: a reply with no choice)."""

    def __init__(self, choice: dict | None) -> None:
        self.choice = choice


class ShapeServer(ChatServer):
    """ChatServer whose responder may return a ``Raw`` choice."""

    def __init__(self, respond: Callable[[dict], object]) -> None:
        self.raw_respond = respond
        super().__init__(lambda payload: "")
        server = self
        handler = self.httpd.RequestHandlerClass

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.requests.append(payload)
            reply = server.raw_respond(payload)
            if isinstance(reply, Raw):
                choices = [] if reply.choice is None else [reply.choice]
            else:
                choices = [{"message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]
            body = json.dumps({"choices": choices, "usage": server.usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        handler.do_POST = do_POST


SHAPES = {
    "truncations": Raw(
        {"message": {"content": "", "reasoning_content": "Let me think."}, "finish_reason": "length"}
    ),
    "no_content": Raw(None),
    "tool_calls": Raw(
        {
            "message": {
                "content": None,
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            "finish_reason": "tool_calls",
        }
    ),
    "refusals": Raw({"message": {"content": None, "refusal": "I won't."}, "finish_reason": "stop"}),
}


@pytest.mark.parametrize("kind", [*SHAPES, "filtered", "empty"])
def test_every_reply_shape_is_a_counted_step_outcome(kind, tmp_path):
    shape = {
        **SHAPES,
        "filtered": Raw({"message": {"content": ""}, "finish_reason": "content_filter"}),
        "empty": Raw({"message": {"content": "  ", "reasoning_content": "thought"}, "finish_reason": "stop"}),
    }[kind]
    counter = {"filtered": "refusals", "empty": "no_content"}.get(kind, kind)
    srv = ShapeServer(lambda payload: shape)
    try:
        env = make_env("HarnessPlanning-v0", srv.base_url, cache=str(tmp_path / "c.sqlite"))
        env.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
        _, _, _, _, info = env.step(int(Action.DRAFT))  # a step, not a stopped run
        record = env.unwrapped._ep.steps[-1]
        assert record["failure"] and record["draft_hash"] is None
        io = record["executor_io"]
        assert io["error"] is not None and not info["action_mask"][Action.CHECK]
        if kind in ("truncations", "empty"):
            assert io["reasoning_content"] in ("Let me think.", "thought")
        if kind == "truncations":
            assert "while still reasoning" in io["error"]
        _, _, _, _, info = env.step(int(Action.SUBMIT))
        assert info["usage"][counter] == 1
        others = {"parse_failures", "truncations", "no_content", "tool_calls", "refusals"} - {counter}
        assert all(info["usage"][name] == 0 for name in others)
        assert env.unwrapped.executor.stats()[counter] == 1
        # and replayed from the cache, the same kind again
        replay = make_env(
            "HarnessPlanning-v0", srv.base_url, cache=str(tmp_path / "c.sqlite"), cache_mode="replay"
        )
        replay.reset(seed=0, options={"task_id": env.unwrapped.tasks[0].task_id})
        replay.step(int(Action.DRAFT))
        assert replay.unwrapped._ep.steps[-1]["executor_io"]["error"] == io["error"]
    finally:
        srv.close()


def _plan_object(payload: dict) -> dict:
    prompt = payload["messages"][-1]["content"]
    task = next(t for t in _PLANNING.tasks if t.prompt.strip() in prompt)
    return {"plan": _PLANNING.domain.pool(task).reference.strip().splitlines()}


@pytest.mark.parametrize("mode", ["json-schema", "tools"])
def test_structured_output_sends_the_schema_and_reads_the_object(mode):
    def respond(payload: dict) -> object:
        plan = json.dumps(_plan_object(payload))
        if mode == "json-schema":
            return plan
        call = {"type": "function", "function": {"name": "submit_artifact", "arguments": plan}}
        return Raw({"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"})

    srv = ShapeServer(respond)
    try:
        env = make_env("HarnessPlanning-v0", srv.base_url, structured=mode)
        reward, _ = gather_then_draft(env, 0, env.unwrapped.tasks[0].task_id)
    finally:
        srv.close()
    assert reward == pytest.approx(1.0)
    request = srv.requests[-1]
    if mode == "json-schema":
        schema = request["response_format"]["json_schema"]["schema"]
        assert request["response_format"]["type"] == "json_schema"
        assert "JSON schema" in request["messages"][-1]["content"]
    else:
        [tool] = request["tools"]
        schema = tool["function"]["parameters"]
        assert request["tool_choice"]["function"]["name"] == tool["function"]["name"] == "submit_artifact"
    assert schema["properties"] == {"plan": {"type": "array", "items": {"type": "string"}}}


@pytest.mark.parametrize(
    ("mode", "reply", "error"),
    [
        ("tools", "{not json", "parse failure: the function call's arguments do not fit"),
        ("tools", json.dumps({"steps": ["a"]}), "parse failure: the function call's arguments do not fit"),
        ("json-schema", json.dumps({"steps": ["a"]}), "parse failure: "),
        ("json-schema", "free text", None),  # a server that ignored response_format: read as free text
    ],
)
def test_a_structured_reply_that_does_not_fit_is_a_parse_failure(mode, reply, error):
    def respond(payload: dict) -> object:
        if reply == "free text":
            return wrap("HarnessPlanning-v0", _PLANNING.domain.pool(task).reference)
        if mode == "json-schema":
            return reply
        call = {"type": "function", "function": {"name": "submit_artifact", "arguments": reply}}
        return Raw({"message": {"content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"})

    srv = ShapeServer(respond)
    try:
        env = make_env("HarnessPlanning-v0", srv.base_url, structured=mode)
        task = env.unwrapped.tasks[0]
        env.reset(seed=0, options={"task_id": task.task_id})
        env.step(int(Action.DRAFT))
    finally:
        srv.close()
    io = env.unwrapped._ep.steps[-1]["executor_io"]
    if error is None:
        assert io["error"] is None and env.unwrapped._ep.draft == _PLANNING.domain.pool(task).reference
    else:
        assert io["error"].startswith(error) and env.unwrapped._ep.steps[-1]["failure"]


def test_every_bad_setting_is_named_and_a_settings_file_is_checked(tmp_path):
    for settings, why in [
        ({"context_tokens": 1024}, r"context_tokens \(1024\) must exceed max_tokens \(1024\)"),
        ({"structured": "xml"}, "unknown structured mode 'xml'"),
        ({"temperature": -0.1}, "temperature must be >= 0"),
        ({"top_p": 0.0}, r"top_p must lie in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p must lie in \(0, 1\]"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"price_out": -1.0}, "price_out must be >= 0"),
        ({"extra_body": "[1]"}, "extra_body must be a JSON object, got list"),
    ]:
        with pytest.raises(ValueError, match=why):
            OpenAIConfig(**settings)
    assert OpenAIConfig(extra_body={"b": 1, "a": [2]}).extra_body == '{"a": [2], "b": 1}'  # canonical
    assert OpenAIConfig(stop="END").stop == ("END",)
    path = tmp_path / "run.toml"
    path.write_text('[executor]\nmodel = "m"\nstop = ["END"]\n[executor.extra_body]\ntop_k = 20\n')
    config = OpenAIConfig.from_toml(path, temperature=0.5)
    assert (config.model, config.stop, config.temperature) == ("m", ("END",), 0.5)
    assert config.request_params()["top_k"] == 20
    path.write_text("model = [unclosed\n")
    with pytest.raises(ValueError, match="cannot read executor settings"):
        OpenAIConfig.from_toml(path)
    with pytest.raises(ValueError, match="cannot read executor settings"):
        OpenAIConfig.from_toml(tmp_path / "missing.toml")
    path.write_text('model = "m"\ncolour = "blue"\n')
    with pytest.raises(ValueError, match="unknown executor setting\\(s\\) colour; known: backoff_s"):
        OpenAIConfig.from_toml(path)
    path.write_text("temperature = -1\n")
    with pytest.raises(ValueError, match="temperature must be >= 0"):  # a bad value is named on reading
        OpenAIConfig.toml_settings(path)


def test_fold_system_keeps_every_message_without_a_system_role():
    from harness_gym.executors.openai_executor import fold_system

    plain = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    assert fold_system(plain) == plain
    systems = [{"role": "system", "content": "s1"}, {"role": "system", "content": "s2"}]
    # no user message to head: the system text becomes one
    assert fold_system([*systems, plain[1]]) == [{"role": "user", "content": "s1\n\ns2"}, plain[1]]
    mixed = [plain[1], {"role": "system", "content": "s"}, plain[0]]
    assert fold_system(mixed) == [plain[1], {"role": "user", "content": "s\n\nu"}]
    assert mixed[2] == {"role": "user", "content": "u"}  # the input is left as it was


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_every_domain_has_a_schema_whose_object_reads_back(env_id):
    """Each domain's structured reply, rendered back to text, goes through the same parser: an object
    with the schema's fields gives an artifact (or a ParseError naming the problem), never a crash."""
    from harness_gym.executors.prompts import ParseError

    env = gym.make(env_id, split="eval")
    domain = env.unwrapped.domain
    prompts = domain.prompts_cls(domain)
    task = env.unwrapped.tasks[0]
    for kind in ("draft", "judge"):
        request = ExecutorRequest(kind, task, Context(), draft="x" if kind == "judge" else None)
        _, schema = prompts.reply_schema(request)
        assert schema["type"] == "object" and set(schema["required"]) == set(schema["properties"])
        filler = {"string": "value", "number": 1, "array": ["a"], "object": {}}
        obj = {
            name: (prop.get("enum") or [filler[prop.get("type", "string")]])[0]
            for name, prop in schema["properties"].items()
        }
        with contextlib.suppress(ParseError):  # a filler value may not be an artifact, but nothing else
            assert prompts.parse(request, prompts.structured_text(request, obj))
        with pytest.raises(ParseError):
            prompts.structured_text(request, {"unexpected": 1})


def test_sampling_settings_reach_the_server_from_the_command_line(serve, capsys):
    from harness_gym.cli.main import main

    srv = serve(lambda payload: "1. nothing")
    args = ["run", "--env", "HarnessPlanning-v0", "--episodes", "1", "--executor", "openai", "--model", "m"]
    args += [
        "--base-url",
        srv.base_url,
        "--top-p",
        "0.9",
        "--llm-seed",
        "7",
        "--stop",
        "END",
        "--stop",
        "###",
    ]
    args += ["--reasoning-effort", "low", "--extra-body", '{"top_k": 5}', "--max-tokens", "300"]
    assert main(args) == 0
    request = srv.requests[0]
    assert request["temperature"] == 0.0 and request["seed"] == 7  # a seed at temperature 0 too
    assert (request["top_p"], request["stop"], request["reasoning_effort"]) == (0.9, ["END", "###"], "low")
    assert request["top_k"] == 5 and request["max_tokens"] == 300
    with pytest.raises(SystemExit, match="--top-p, --llm-seed only apply with --executor openai"):
        main(["run", "--env", "HarnessPlanning-v0", "--top-p", "0.5", "--llm-seed", "1"])
    with pytest.raises(SystemExit, match="extra_body is not JSON"):
        main([*args, "--extra-body", "{oops"])


def test_a_settings_file_serves_the_run_its_resume_and_its_replay(serve, tmp_path, capsys):
    from harness_gym.cli.main import main

    srv = serve(planning_replies)
    cache = tmp_path / "c.sqlite"
    config = tmp_path / "run.toml"
    config.write_text(
        f'[executor]\nmodel = "m"\nbase_url = "{srv.base_url}"\ntemperature = 0.5\nmax_tokens = 256\n'
        f'cache = "{cache}"\nstop = ["END"]\nprice_in = 1000.0\nprice_out = 4000.0\n'
    )
    out = tmp_path / "eval.json"
    args = ["evaluate", "--env", "HarnessPlanning-v0", "--policy", "base", "--quiet", "--config", str(config)]
    assert main([*args, "--out", str(out)]) == 0
    first = capsys.readouterr().out
    assert all(
        r["temperature"] == 0.5 and r["stop"] == ["END"] and r["max_tokens"] == 256 for r in srv.requests
    )
    # 180 episodes at temperature 0.5: every call sent; 100 + 20 tokens at $1000 / $4000 per million
    sent = len(srv.requests)
    assert f"{sent} sent ({sent * 100} prompt + {sent * 20} completion tokens, ${sent * 0.18:.4f})" in first
    assert "executor speed:" in first and "p50" in first and "p95" in first
    srv.close()
    # replay with nothing but the cache: every other setting comes from it
    replay = [
        "evaluate",
        "--env",
        "HarnessPlanning-v0",
        "--policy",
        "base",
        "--quiet",
        "--executor",
        "openai",
    ]
    assert main([*replay, "--cache", str(cache), "--cache-mode", "replay"]) == 0
    replayed = capsys.readouterr().out
    assert "0 sent" in replayed and f"{sent} from the cache" in replayed
    assert [line for line in first.splitlines() if line.startswith("mean G")] == [
        line for line in replayed.splitlines() if line.startswith("mean G")
    ]
    with pytest.raises(SystemExit, match="unknown executor setting"):
        bad = tmp_path / "bad.toml"
        bad.write_text('modle = "m"\n')
        main(["run", "--env", "HarnessPlanning-v0", "--config", str(bad)])


def test_copies_are_counted_and_audit_records_join_the_cache(serve, tmp_path, capsys):
    from harness_gym.cli.main import main
    from harness_gym.executors import ResponseCache

    srv = serve(planning_replies)
    cache, out = tmp_path / "c.sqlite", tmp_path / "eval.json"
    args = ["evaluate", "--env", "HarnessPlanning-v0", "--policy", "base", "--quiet", "--executor", "openai"]
    assert (
        main([*args, "--model", "m", "--base-url", srv.base_url, "--cache", str(cache), "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    # temperature 0, Base: the 3 seeds x 3 rollouts of a task are one episode nine times
    assert "only 20 of 180 episodes are distinct" in printed
    assert "180 calls (20 distinct): 20 sent" in printed and "160 from the cache" in printed
    records = json.loads(out.read_text())
    assert len(records) == 180
    step = next(s for s in records[0]["step_records"] if "executor_io" in s)
    io = step["executor_io"]
    assert {"cache_key", "cached", "latency_s", "prompt_tokens", "completion_tokens", "model"} <= set(io)
    assert "messages" not in io and "reply" not in io  # those are in the cache, by key
    with ResponseCache(cache, "read_only") as opened:
        assert opened.request(io["cache_key"])["messages"][-1]["role"] == "user"
        # every episode, also a copy served from the cache, joins by its id and step
        for record in (records[0], records[-1]):
            [call] = opened.conversation(record["episode_id"])
            assert call["step"] == step["t"] and call["reply"]
    traces: dict[str, set] = {}
    for record in records:
        traces.setdefault(record["task_id"], set()).add(record["trace"])
    assert len(traces) == 20 and all(len(t) == 1 for t in traces.values())  # each task's nine episodes


def test_replay_reruns_every_recorded_command(serve, tmp_path, capsys):
    require("minari")
    from harness_gym.cli.main import main

    srv = serve(planning_replies)
    cache = tmp_path / "c.sqlite"
    llm = ["--executor", "openai", "--model", "m", "--base-url", srv.base_url, "--cache", str(cache)]
    assert main(["run", "--env", "HarnessPlanning-v0", "--episodes", "3", "--temperature", "0.6", *llm]) == 0
    evaluate = ["evaluate", "--env", "HarnessPlanning-v0", "--policy", "exploratory", "--quiet"]
    assert main([*evaluate, "--out", str(tmp_path / "e.json"), *llm]) == 0
    collect = [
        "collect",
        "--env",
        "HarnessPlanning-v0",
        "--episodes",
        "6",
        "--quiet",
        "--root",
        str(tmp_path),
    ]
    assert main([*collect, "--dataset-id", "harness/planning/r-v0", *llm, "--llm-seed", "3"]) == 0
    srv.close()
    capsys.readouterr()
    assert main(["replay", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "replayed 3 recorded run(s), 189 episodes" in out and out.rstrip().endswith("all identical")
    assert not (tmp_path / "e.json.partial").exists()  # outputs went to a temporary directory
