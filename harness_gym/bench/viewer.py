"""A static HTML page of episodes (``harness-gym view``): one self-contained file, no server, no assets.

Sources:

- a dataset id (a Minari dataset written by ``harness_gym.datasets.collect``): each episode's actions, the HMS
  events that fired, G and how it ended;
- a bench results directory: per setting, the policies' summary from ``results.json`` and the episodes
  of the behaviour datasets under ``datasets/`` (while they are kept);
- a JSONL file of episodes as the environment reports them (the final ``info``: ``trajectory``, ``G``,
  ``hms``, ``termination_reason``), whose step records also carry what happened at each step and, for a
  chat-LLM executor, ``executor_io`` ({messages, reply, finish_reason, cache_key, error}).

Per episode, a timeline of the actions (CHECK, REVISE and SUBMIT marked, illegal actions struck
through), the HMS events that fired, G, and each step's text and executor reply (collapsible).
"""

from __future__ import annotations

import html
import json
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
    """Step records: at least ``t``, ``action``, ``valid``; optionally ``text`` and ``executor_io``."""


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
        views.append(
            EpisodeView(
                label=f"{label} {i}",
                env_id=trajectory["env_id"],
                task_id=trajectory["task_id"],
                G=float(info["G"]),
                termination=str(info.get("termination_reason", "?")),
                fired=fired,
                steps=list(trajectory["steps"]),
            )
        )
    return views


def from_dataset(dataset: Any, limit: int = MAX_EPISODES) -> Setting:
    """A Minari dataset's episodes (the first ``limit``) as one setting."""
    from harness_gym.datasets.collect import iter_episodes

    meta = dataset.storage.metadata
    env_id = meta.get("harness_env_id", "?")
    task_ids = meta.get("harness_task_ids", [])
    events = meta.get("harness_hms_events", list(EVENTS))
    behaviors = meta.get("harness_behaviors", [])
    names = [action.name for action in Action]
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
        steps = [
            {"t": k + 1, "action": names[int(a)], "valid": bool(masks[k][int(a)])}
            for k, a in enumerate(ep.actions)
        ]
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
            )
        )
    return setting


def from_jsonl(path: Path, limit: int = MAX_EPISODES) -> list[Setting]:
    """Final infos, one JSON object a line, grouped by env id."""
    infos = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ViewError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            info = json.loads(line)
            _ = info["trajectory"]["steps"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ViewError(f"{path} line {number}: not an episode's final info ({exc})") from None
        infos.append(info)
    settings: dict[str, Setting] = {}
    for view in from_infos(infos):
        setting = settings.setdefault(view.env_id, Setting(title=f"{view.env_id}: {path.name}"))
        if len(setting.episodes) < limit:
            setting.episodes.append(view)
        else:
            setting.left_out += 1
    return list(settings.values())


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
    for path in sorted(directory.glob("*.jsonl")):
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
        return from_jsonl(path, limit)
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
table.summary{border-collapse:collapse;margin:.5em 0}table.summary td,table.summary th{border:1px solid #ddd;
padding:2px 8px;text-align:right}table.summary td:first-child{text-align:left}
.episode{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;margin:.6em 0}
.head{display:flex;gap:1em;flex-wrap:wrap;align-items:baseline}.g{font-weight:bold}
.event{display:inline-block;background:#eef;border:1px solid #99c;border-radius:3px;padding:0 5px;
margin:0 3px;font-size:12px}
ol.timeline{list-style:none;display:flex;flex-wrap:wrap;gap:4px;padding:0;margin:.5em 0}
ol.timeline li,.chip{border-radius:4px;padding:2px 7px;background:#4a6fa5;color:#fff;font-size:12px}
ol.timeline li.invalid{background:#999;text-decoration:line-through}
details{margin:.2em 0 .2em 1em}pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0}
.muted{color:#777}
"""


def _chip_style(action: str) -> str:
    marker = MARKED.get(action)
    return f' style="background:{marker[1]}"' if marker else ""


def _episode_html(view: EpisodeView) -> str:
    esc = html.escape
    chips = []
    for step in view.steps:
        cls = f"step action-{esc(step['action'])}" + ("" if step.get("valid", True) else " invalid")
        style = _chip_style(step["action"]) if step.get("valid", True) else ""
        chips.append(
            f'<li class="{cls}"{style} title="step {step["t"]}">{step["t"]} {esc(step["action"])}</li>'
        )
    details = []
    for step in view.steps:
        io = step.get("executor_io")
        text = step.get("text")
        if io:
            reply = f"error: {io['error']}" if io.get("error") else io.get("reply", "")
            messages = "".join(
                f"<pre><b>{esc(str(m.get('role', '?')))}</b>: {esc(str(m.get('content', '')))}</pre>"
                for m in io.get("messages", [])
            )
            details.append(
                f'<details class="executor-io"><summary>step {step["t"]} {esc(step["action"])}: '
                "executor reply "
                f"({esc(str(io.get('finish_reason', '?')))}"
                f"{', cache ' + esc(str(io['cache_key'])[:12]) if io.get('cache_key') else ''})</summary>"
                f"<pre>{esc(str(reply))}</pre><details><summary>prompt messages</summary>{messages}</details>"
                "</details>"
            )
        elif text:
            details.append(f'<div class="muted">step {step["t"]} {esc(step["action"])}: {esc(text)}</div>')
    events = (
        "".join(f'<span class="event">{esc(e)}</span>' for e in view.fired)
        or '<span class="muted">none</span>'
    )
    steps_html = f"<details><summary>what happened</summary>{''.join(details)}</details>" if details else ""
    return (
        f'<div class="episode"><div class="head"><b>{esc(view.label)}</b><span>{esc(view.task_id)}</span>'
        f'<span class="g">G = {view.G:.3f}</span><span>ended by {esc(view.termination)}</span>'
        f"<span>HMS events fired: {events}</span></div>"
        f'<ol class="timeline">{"".join(chips)}</ol>{steps_html}</div>'
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


def render_html(settings: Sequence[Setting], title: str) -> str:
    """The whole page."""
    legend = " ".join(
        f'<span class="chip" style="background:{colour}">{name}</span>'
        for name, (_, colour) in MARKED.items()
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Each episode: its actions in order (marked: {legend}; struck through: illegal, a no-op), "
        "the HMS events that fired, and G. Open “what happened” for each step's outcome and, with a chat "
        "LLM executor, its prompt and reply.</p>",
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
    parts.append("</body></html>")
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
