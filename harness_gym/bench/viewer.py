"""A static HTML page of episodes (``harness-gym view``): one self-contained file, no server, no assets.

Sources:

- a dataset id (a Minari dataset written by ``harness_gym.datasets.collect``): each episode's actions, the HMS
  events that fired, G and how it ended; with a chat-LLM executor also each call's reply kind, latency and
  tokens, and its prompt and reply when the response cache the dataset names is at hand;
- a bench results directory: per setting, the policies' summary from ``results.json``, the evaluation
  episodes the bench kept of every policy (``episodes/<env id>.jsonl``) and the episodes of the behaviour
  datasets under ``datasets/`` (while they are kept);
- a JSONL file of episodes as the environment reports them (``run --episodes-out``: the final ``info``:
  ``trajectory``, ``G``, ``hms``, ``rubric``, ``termination_reason``), whose step records also carry what
  happened at each step and, for a chat-LLM executor, ``executor_io`` (messages, reply, reasoning,
  finish_reason, model, cache key and hit, latency, tokens, cost, error);
- the output of ``evaluate --out`` (a JSON list of evaluation records with their step records; prompts
  and replies are not in it).

Per episode, a timeline of the actions (CHECK, REVISE and SUBMIT coloured, illegal actions struck through;
a check that passed or failed and a reply that failed to parse or was truncated marked on its chip), the
HMS events that fired, G and its rubric, and each step's text and executor call (collapsible). A search
box and filters (setting, policy, G range, event) narrow the episodes shown, in the page itself.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_gym.core.actions import Action
from harness_gym.core.hms import EVENTS
from harness_gym.core.trajectory import MARKED

MAX_EPISODES = 40
"""Episodes shown per setting (the page stays small; the count left out is stated)."""


class ViewError(ValueError):
    """A view source that does not exist or cannot be read; the message names it."""


@dataclass
class EpisodeView:
    label: str
    env_id: str
    task_id: str
    G: float
    termination: str
    fired: list[str]
    steps: list[dict[str, Any]]
    """Step records: at least ``t``, ``action``, ``valid``; optionally ``text``, ``failure``, ``check``,
    ``tests`` and ``executor_io``."""
    policy: str = ""
    rubric: dict[str, Any] = field(default_factory=dict)
    """{criterion: (score, max)}, when known."""
    episode_id: str = ""
    """``trajectory["episode_id"]``: what response-cache rows name the episode by (table ``calls``)."""


@dataclass
class Setting:
    title: str
    summary: list[dict[str, Any]] = field(default_factory=list)
    episodes: list[EpisodeView] = field(default_factory=list)
    left_out: int = 0


# -- sources -------------------------------------------------------------------------------------
def from_infos(infos: Iterable[Mapping[str, Any]], label: str = "episode") -> list[EpisodeView]:
    """Episodes from final infos as ``env.step`` returns them (or their JSON)."""
    views = []
    for i, info in enumerate(infos):
        trajectory = info["trajectory"]
        fired = [name for name, event in info.get("hms", {}).items() if event.get("fired")]
        episode_id = str(trajectory.get("episode_id") or "")
        views.append(
            EpisodeView(
                label=f"{label} {i}",
                env_id=trajectory["env_id"],
                task_id=trajectory["task_id"],
                G=float(info["G"]),
                termination=str(info.get("termination_reason", "?")),
                fired=fired,
                steps=list(trajectory["steps"]),
                policy=episode_id.split("/")[3] if episode_id.count("/") >= 3 else "",
                rubric=dict(info.get("rubric") or {}),
                episode_id=episode_id,
            )
        )
    return views


def from_records(records: Iterable[Mapping[str, Any]]) -> list[EpisodeView]:
    """Episodes from evaluation records (``evaluate --out``, a bench's ``episodes/<env id>.jsonl``)."""
    return [
        EpisodeView(
            label=f"{r['policy']} seed {r['seed']} rollout {r['rollout']}",
            env_id=str(r["env_id"]),
            task_id=str(r["task_id"]),
            G=float(r["G"]),
            termination=str(r.get("termination_reason", "?")),
            fired=[e for e, fired in zip(EVENTS, r.get("fired", ()), strict=False) if fired],
            steps=list(r.get("step_records") or []),
            policy=str(r["policy"]),
            rubric=dict(r.get("rubric") or {}),
            episode_id=str(r.get("episode_id") or ""),
        )
        for r in records
    ]


def _grouped(views: Iterable[EpisodeView], title: str, limit: int) -> list[Setting]:
    """Episodes grouped by env id, at most ``limit`` per policy and env id (the rest counted)."""
    settings: dict[str, Setting] = {}
    shown: dict[tuple[str, str], int] = {}
    for view in views:
        setting = settings.setdefault(view.env_id, Setting(title=f"{view.env_id}: {title}"))
        key = (view.env_id, view.policy)
        if shown.get(key, 0) < limit:
            setting.episodes.append(view)
            shown[key] = shown.get(key, 0) + 1
        else:
            setting.left_out += 1
    return list(settings.values())


def _cache_reader(meta: Mapping[str, Any]) -> Any:
    """The response cache a dataset's executor recorded into, if that file is here (else None)."""
    try:
        path = json.loads(meta.get("harness_executor", "{}")).get("cache_path")
    except (TypeError, ValueError):
        return None
    if not path or not Path(path).is_file():
        return None
    from harness_gym.executors.cache import CacheError, ResponseCache

    try:
        return ResponseCache(path, "read_only")
    except (CacheError, OSError):
        return None


def _audit_calls(dataset: Any) -> dict[tuple[int, int], dict[str, Any]]:
    """A chat-LLM dataset's ``collect.AUDIT_FILE`` by (episode, step), if it is there."""
    from harness_gym.datasets.collect import AUDIT_FILE

    path = Path(dataset.storage.data_path).parent / AUDIT_FILE
    if not path.is_file():
        return {}
    calls = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {(int(c["episode"]), int(c["step"])): c for c in calls}


def _dataset_io(
    infos: Mapping[str, Any], k: int, errors: Sequence[str], cache: Any, audit: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Step ``k``'s executor call from a dataset's arrays and audit file (with the prompt and reply from
    the response cache when it is at hand)."""
    if "llm_cache_key" not in infos:
        return None
    key = bytes(infos["llm_cache_key"][k]).decode()
    if not key:
        return None
    error = int(infos["llm_error"][k])
    io: dict[str, Any] = {
        "cache_key": key,
        "prompt_tokens": int(infos["llm_prompt_tokens"][k]),
        "completion_tokens": int(infos["llm_completion_tokens"][k]),
        "error": errors[error].replace("_", " ") if 0 <= error < len(errors) else None,
    }
    if audit:
        io.update({name: audit[name] for name in ("cached", "latency_s", "cost_usd") if name in audit})
    if cache is not None:
        request = cache.request(key)
        found = cache.get(key)
        if request is not None:
            io["messages"] = request.get("messages", [])
            io["model"] = request.get("model")
        if found is not None:
            io["reply"], io["reasoning_content"] = found.text, found.reasoning
            io["finish_reason"] = found.finish_reason
    return io


def from_dataset(dataset: Any, limit: int = MAX_EPISODES) -> Setting:
    """A Minari dataset's episodes (the first ``limit``) as one setting."""
    from harness_gym.datasets.collect import iter_episodes

    meta = dataset.storage.metadata
    env_id = meta.get("harness_env_id", "?")
    task_ids = meta.get("harness_task_ids", [])
    events = meta.get("harness_hms_events", list(EVENTS))
    behaviors = meta.get("harness_behaviors", [])
    names = [action.name for action in Action]
    errors = meta.get("harness_llm_errors", [])
    cache = _cache_reader(meta)
    audit = _audit_calls(dataset) if errors else {}
    short_id = dataset.spec.dataset_id.rsplit("/", 1)[-1]
    setting = Setting(title=f"{env_id}: dataset {dataset.spec.dataset_id}")
    setting.left_out = max(0, dataset.total_episodes - limit)
    for ep in iter_episodes(dataset):
        if len(setting.episodes) >= limit:
            break
        infos = ep.infos
        masks = infos["action_mask"]
        task_index = int(infos["task_index"][0])
        behavior = behaviors[int(infos["behavior"][0])] if "behavior" in infos and behaviors else "?"
        steps = []
        for k, a in enumerate(ep.actions):
            step: dict[str, Any] = {"t": k + 1, "action": names[int(a)], "valid": bool(masks[k][int(a)])}
            io = _dataset_io(infos, k, errors, cache, audit.get((int(ep.id), k + 1)))
            if io is not None:
                step["executor_io"] = io
            steps.append(step)
        fired = [name for name, flag in zip(events, infos["hms_fired"][-1], strict=False) if flag == 1]
        setting.episodes.append(
            EpisodeView(
                label=f"{short_id} episode {ep.id} ({behavior})",
                env_id=env_id,
                task_id=task_ids[task_index] if task_index < len(task_ids) else str(task_index),
                G=float(infos["G"][-1]),
                termination="submit" if bool(ep.terminations[-1]) else "budget",
                fired=fired,
                steps=steps,
                policy=behavior,
                rubric=_dataset_rubric(meta, infos),
            )
        )
    return setting


def _dataset_rubric(meta: Mapping[str, Any], infos: Mapping[str, Any]) -> dict[str, Any]:
    criteria = meta.get("harness_rubric_criteria", [])
    if "rubric_score" not in infos:
        return {}
    score, top = infos["rubric_score"][-1], infos["rubric_max"][-1]
    return {
        name: (float(s), float(m))
        for name, s, m in zip(criteria, score, top, strict=False)
        if not (math.isnan(float(s)) or math.isnan(float(m)))
    }


def _read_records(path: Path) -> list[dict[str, Any]]:
    """A JSON list or JSON lines of final infos or evaluation records (checked: one or the other)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ViewError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ViewError(f"{path}: not a JSON list of episodes ({exc})") from None
        numbered = list(enumerate(items, start=1))
        where = "item"
    else:
        numbered = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ViewError(f"{path} line {number}: not an episode's final info ({exc})") from None
        where = "line"
    for number, item in numbered:
        ok = isinstance(item, dict) and (
            isinstance((item.get("trajectory") or {}).get("steps"), list) or "step_records" in item
        )
        if not ok:
            raise ViewError(f"{path} {where} {number}: not an episode's final info (no trajectory steps)")
    return [item for _, item in numbered]


def from_jsonl(path: Path, limit: int = MAX_EPISODES) -> list[Setting]:
    """Final infos (``run --episodes-out``) or evaluation records (``evaluate --out``, a bench's kept
    episodes), grouped by env id; at most ``limit`` per policy."""
    items = _read_records(path)
    infos = [item for item in items if "trajectory" in item]
    records = [item for item in items if "trajectory" not in item]
    return _grouped([*from_infos(infos), *from_records(records)], path.name, limit)


def from_results(directory: Path, limit: int = MAX_EPISODES) -> list[Setting]:
    """A bench results directory: the policies' summaries and the kept behaviour datasets' episodes."""
    from harness_gym.datasets.files import DatasetError, local_ids, open_dataset

    settings: dict[str, Setting] = {}
    results_file = directory / "results.json"
    if results_file.is_file():
        try:
            results = json.loads(results_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ViewError(f"{results_file}: cannot be read ({exc})") from None
        for env_id, setting in (results.get("settings") or {}).items():
            policies = (setting.get("compare") or {}).get("policies") or {}
            rows = [{"policy": name, **entry} for name, entry in policies.items()]
            settings[env_id] = Setting(title=env_id, summary=rows)
    datasets = directory / "datasets"
    for dataset_id in local_ids(datasets) if datasets.is_dir() else []:
        try:
            found = from_dataset(open_dataset(dataset_id, datasets), limit)
        except DatasetError as exc:
            found = Setting(title=f"{dataset_id} (unreadable: {exc})")
        env_id = found.episodes[0].env_id if found.episodes else dataset_id
        setting = settings.setdefault(env_id, Setting(title=env_id))
        setting.episodes += found.episodes
        setting.left_out += found.left_out
    for path in [*sorted((directory / "episodes").glob("*.jsonl")), *sorted(directory.glob("*.jsonl"))]:
        for found in from_jsonl(path, limit):
            env_id = found.episodes[0].env_id
            setting = settings.setdefault(env_id, Setting(title=env_id))
            setting.episodes += found.episodes
            setting.left_out += found.left_out
    if not settings and not results_file.is_file():
        raise ViewError(f"{directory} holds no results.json, datasets/ or episode files (*.jsonl)")
    return list(settings.values())


def load(target: str, root: str | os.PathLike | None = None, limit: int = MAX_EPISODES) -> list[Setting]:
    """The settings to show for a results directory, an episodes JSONL file or a dataset id."""
    path = Path(target)
    if path.is_dir():
        return from_results(path, limit)
    if path.is_file():
        return from_jsonl(path, limit)  # JSON lines or a JSON list
    if target.startswith("harness/"):
        from harness_gym.datasets.files import DatasetError, open_dataset

        try:
            return [from_dataset(open_dataset(target, root), limit)]
        except DatasetError as exc:
            raise ViewError(str(exc)) from None
    raise ViewError(f"{target!r} is neither a results directory, an episodes file nor a dataset id")


def write_infos(infos: Iterable[Mapping[str, Any]], path: str | os.PathLike, append: bool = False) -> None:
    """Final infos as JSON lines (what ``from_jsonl`` reads); arrays become lists."""

    def plain(value: Any) -> Any:
        return value.tolist() if hasattr(value, "tolist") else str(value)

    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        for info in infos:
            handle.write(json.dumps(dict(info), default=plain) + "\n")


# -- the page --------------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table.summary,table.rubric{border-collapse:collapse;margin:.5em 0}table.summary td,table.summary th,
table.rubric td{border:1px solid #ddd;padding:2px 8px;text-align:right}table.summary td:first-child,
table.rubric td:first-child{text-align:left}table.rubric{font-size:12px}
.episode{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;margin:.6em 0}
.head{display:flex;gap:1em;flex-wrap:wrap;align-items:baseline}.g{font-weight:bold}
.event{display:inline-block;background:#eef;border:1px solid #99c;border-radius:3px;padding:0 5px;
margin:0 3px;font-size:12px}
ol.timeline{list-style:none;display:flex;flex-wrap:wrap;gap:4px;padding:0;margin:.5em 0}
ol.timeline li,.chip{border-radius:4px;padding:2px 7px;background:#4a6fa5;color:#fff;font-size:12px}
ol.timeline li.invalid{background:#999;text-decoration:line-through}
ol.timeline li[data-mark=fail],ol.timeline li[data-mark=parse],ol.timeline li[data-mark=truncated],
ol.timeline li[data-mark=empty]{outline:2px solid #c0392b}
ol.timeline li[data-mark=pass]{outline:2px solid #2a9d4b}
details{margin:.2em 0 .2em 1em}pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0}
.muted{color:#777}.filters{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #eee}
.filters input,.filters select{margin-right:.6em}
"""

_SCRIPT = """
function applyFilters(){
  const q=document.getElementById('q').value.toLowerCase();
  const s=document.getElementById('f-setting').value, p=document.getElementById('f-policy').value;
  const e=document.getElementById('f-event').value;
  const lo=parseFloat(document.getElementById('f-gmin').value);
  const hi=parseFloat(document.getElementById('f-gmax').value);
  let shown=0;
  document.querySelectorAll('.episode').forEach(function(el){
    const g=parseFloat(el.dataset.g);
    const ok=(!q||el.textContent.toLowerCase().includes(q))&&(!s||el.dataset.setting===s)&&
      (!p||el.dataset.policy===p)&&(!e||el.dataset.events.split(' ').includes(e))&&
      (isNaN(lo)||g>=lo)&&(isNaN(hi)||g<=hi);
    el.style.display=ok?'':'none'; if(ok){shown++;}
  });
  document.getElementById('shown').textContent=shown;
}
document.querySelectorAll('.filters input,.filters select').forEach(function(el){
  el.addEventListener('input',applyFilters);});
(function(){
  const given=new URLSearchParams(location.hash.slice(1));
  const ids={q:'q',setting:'f-setting',policy:'f-policy',event:'f-event',gmin:'f-gmin',gmax:'f-gmax'};
  for(const name in ids){if(given.has(name)){document.getElementById(ids[name]).value=given.get(name);}}
  applyFilters();
})();
"""
"""Filters the episodes in place; ``view.html#policy=awr&gmax=0.2&event=EarlySubmit`` (keys ``q``,
``setting``, ``policy``, ``event``, ``gmin``, ``gmax``) opens the page filtered."""

MARKS = {
    "pass": ("\u2713", "the check passed"),
    "fail": ("\u2717", "the check found problems"),
    "parse": ("?", "the reply held no artifact in the required form"),
    "truncated": ("\u2702", "the reply was cut off (max_tokens or the context)"),
    "empty": ("\u2205", "the reply was empty, a tool call or a refusal"),
}
"""Chip marks: (symbol, meaning)."""


def step_mark(step: Mapping[str, Any]) -> str | None:
    """The mark of a step's chip (``MARKS``): an executor reply's failure kind, else a check's verdict."""
    io = step.get("executor_io") or {}
    error = str(io.get("error") or "")
    if error:
        if error.startswith("trunc"):
            return "truncated"
        if error.startswith(("parse", "parse_failures")):
            return "parse"
        return "empty"
    if step.get("action") == "CHECK" and step.get("valid", True) and "failure" in step:
        return "fail" if step["failure"] else "pass"
    return None


def _chip_style(action: str) -> str:
    marker = MARKED.get(action)
    return f' style="background:{marker[1]}"' if marker else ""


def _io_summary(io: Mapping[str, Any]) -> str:
    """One line about a call: model, cache hit, latency, tokens, cost, finish reason."""
    parts = []
    if io.get("model"):
        parts.append(str(io["model"]))
    if io.get("cached") is not None:
        parts.append("cache hit" if io["cached"] else "sent")
    if io.get("latency_s") is not None:
        parts.append(f"{float(io['latency_s']):.2f}s")
    if io.get("prompt_tokens") is not None:
        parts.append(f"{io['prompt_tokens']}+{io.get('completion_tokens', 0)} tokens")
    if io.get("cost_usd"):
        parts.append(f"${float(io['cost_usd']):.5f}")
    if io.get("finish_reason"):
        parts.append(str(io["finish_reason"]))
    if io.get("cache_key"):
        parts.append(f"key {str(io['cache_key'])[:12]}")
    return ", ".join(parts)


def _episode_html(view: EpisodeView) -> str:
    esc = html.escape
    chips = []
    for step in view.steps:
        mark = step_mark(step)
        cls = f"step action-{esc(step['action'])}" + ("" if step.get("valid", True) else " invalid")
        style = _chip_style(step["action"]) if step.get("valid", True) else ""
        symbol, meaning = MARKS[mark] if mark else ("", "")
        title = f"step {step['t']}" + (f": {meaning}" if meaning else "")
        marked = f' data-mark="{mark}"' if mark else ""
        chips.append(
            f'<li class="{cls}"{style}{marked} title="{esc(title)}">{step["t"]} {esc(step["action"])}'
            f"{' ' + symbol if symbol else ''}</li>"
        )
    details = []
    for step in view.steps:
        io = step.get("executor_io")
        text = step.get("text")
        if io:
            reply = (
                f"error: {io['error']}\n\n{io.get('reply', '')}" if io.get("error") else io.get("reply", "")
            )
            body = f"<pre>{esc(str(reply))}</pre>" if "reply" in io or io.get("error") else ""
            if io.get("reasoning_content"):
                thought = esc(str(io["reasoning_content"]))
                body += f"<details><summary>reasoning</summary><pre>{thought}</pre></details>"
            if io.get("messages"):
                messages = "".join(
                    f"<pre><b>{esc(str(m.get('role', '?')))}</b>: {esc(str(m.get('content', '')))}</pre>"
                    for m in io["messages"]
                )
                body += f"<details><summary>prompt messages</summary>{messages}</details>"
            details.append(
                f'<details class="executor-io"><summary>step {step["t"]} {esc(step["action"])}: '
                f"executor call ({esc(_io_summary(io))})</summary>{body}</details>"
            )
        elif text:
            details.append(f'<div class="muted">step {step["t"]} {esc(step["action"])}: {esc(text)}</div>')
    events = (
        "".join(f'<span class="event">{esc(e)}</span>' for e in view.fired)
        or '<span class="muted">none</span>'
    )
    rubric = ""
    if view.rubric:
        rows = "".join(
            f"<tr><td>{esc(name)}</td><td>{float(v[0]):.2f} / {float(v[1]):.2f}</td></tr>"
            for name, v in view.rubric.items()
        )
        rubric = (
            f'<details class="rubric"><summary>rubric</summary><table class="rubric">{rows}</table></details>'
        )
    steps_html = f"<details><summary>what happened</summary>{''.join(details)}</details>" if details else ""
    policy = f"<span>policy {esc(view.policy)}</span>" if view.policy else ""
    data = (
        f'data-setting="{esc(view.env_id)}" data-policy="{esc(view.policy)}" data-g="{view.G:.6f}" '
        f'data-events="{esc(" ".join(view.fired))}"'
    )
    return (
        f'<div class="episode" {data}><div class="head"><b>{esc(view.label)}</b>{policy}'
        f'<span>{esc(view.task_id)}</span><span class="g">G = {view.G:.3f}</span>'
        f"<span>ended by {esc(view.termination)}</span><span>HMS events fired: {events}</span>"
        f"{f'<span class=muted>{esc(view.episode_id)}</span>' if view.episode_id else ''}</div>"
        f'<ol class="timeline">{"".join(chips)}</ol>{rubric}{steps_html}</div>'
    )


def _summary_html(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    columns = ["policy"] + [
        c for c in ("G", "delta_G", "hms_norm", "delta_hms", "cbs") if any(c in r for r in rows)
    ]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)

    def cell(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, float) else html.escape(str(value))

    body = "".join(
        "<tr>" + "".join(f"<td>{cell(r.get(c, ''))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f'<table class="summary"><tr>{head}</tr>{body}</table>'


def _filters_html(settings: Sequence[Setting]) -> str:
    esc = html.escape
    views = [view for setting in settings for view in setting.episodes]

    def options(values: Iterable[str]) -> str:
        return '<option value="">all</option>' + "".join(
            f'<option value="{esc(v)}">{esc(v)}</option>' for v in sorted(set(values)) if v
        )

    return (
        '<div class="filters">search <input id="q" type="search" placeholder="task, text, reply...">'
        f'setting <select id="f-setting">{options(v.env_id for v in views)}</select>'
        f'policy <select id="f-policy">{options(v.policy for v in views)}</select>'
        'G from <input id="f-gmin" type="number" min="0" max="1" step="0.05" size="4">'
        'to <input id="f-gmax" type="number" min="0" max="1" step="0.05" size="4">'
        f'event <select id="f-event">{options(e for v in views for e in v.fired)}</select>'
        f'<span class="muted"><span id="shown">{len(views)}</span> episodes shown</span></div>'
    )


def render_html(settings: Sequence[Setting], title: str) -> str:
    """The whole page."""
    legend = " ".join(
        f'<span class="chip" style="background:{colour}">{name}</span>'
        for name, (_, colour) in MARKED.items()
    )
    marks = "; ".join(f"{symbol} {meaning}" for symbol, meaning in MARKS.values())
    has_io = any("executor_io" in step for s in settings for v in s.episodes for step in v.steps)
    has_prompts = any(
        (step.get("executor_io") or {}).get("messages")
        for s in settings
        for v in s.episodes
        for step in v.steps
    )
    calls = (
        " and, with a chat LLM executor, each call (model, cache hit, latency, tokens"
        + (
            ", prompt and reply)"
            if has_prompts
            else "; its prompt and reply are in the response cache, by key)"
        )
        if has_io
        else ""
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Each episode: its actions in order (coloured: {legend}; struck through: illegal, a no-op; "
        f"marks: {html.escape(marks)}), the HMS events that fired, G and its rubric. Open “what "
        f"happened” for each step's outcome{calls}.</p>",
        _filters_html(settings),
    ]
    if not settings:
        parts.append('<p class="muted">no settings in these results</p>')
    for setting in settings:
        parts.append(f'<section class="setting"><h2>{html.escape(setting.title)}</h2>')
        parts.append(_summary_html(setting.summary))
        parts += [_episode_html(view) for view in setting.episodes]
        if not setting.episodes:
            parts.append('<p class="muted">no episodes recorded for this setting</p>')
        if setting.left_out:
            parts.append(f'<p class="muted">{setting.left_out} more episodes not shown</p>')
        parts.append("</section>")
    parts.append(f'<script type="text/javascript">{_SCRIPT}</script></body></html>')
    return "\n".join(parts) + "\n"


def write_view(
    target: str | os.PathLike,
    out: str | os.PathLike,
    root: str | os.PathLike | None = None,
    limit: int = MAX_EPISODES,
) -> Path:
    """Write the page for ``target`` (results directory, episodes file or dataset id) to ``out``."""
    settings = load(str(target), root, limit)
    path = Path(out)
    path.write_text(render_html(settings, f"harness-gym episodes: {target}"), encoding="utf-8")
    return path
