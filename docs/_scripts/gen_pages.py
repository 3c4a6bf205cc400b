"""Write the docs pages that come from the code and the repository (run by ``docs/conf.py``; not committed).

- ``docs/environments/<id>.md``, one per environment id, from the environment class's docstring, in the
  manner of Gymnasium's ``docs/_scripts/gen_mds.py``: the docstring (its Description, the domain's own
  arguments, and the sections every environment shares, whose observation table is
  ``harness_gym.core.state.feature_table()``), preceded by a summary read from the domain class's
  declarations (actions, Base script, rubric, HMS events, budgets), its task counts and its reference
  scores. To change a page, change the docstring or the declaration it comes from.
- ``docs/datasets/published/``, the published buffers' cards, in the manner of Minari's
  ``docs/_scripts/gen_dataset_md.py``: ``datasets/*.md`` as ``datasets/build.py`` wrote them, copied
  unchanged (the index ``datasets/README.md`` becomes ``index.md``).

    python docs/_scripts/gen_pages.py
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from pathlib import Path

import harness_gym
from harness_gym.envs.registry import (
    ALL_ENV_IDS,
    ENV_ENTRY_POINTS,
    ENV_IDS,
    EXTRA_ENV_ENTRY_POINTS,
    env_class,
)
from harness_gym.evaluation.paper import PAPER
from harness_gym.evaluation.reference_scores import reference_table

DOCS = Path(__file__).resolve().parents[1]
ENV_OUT = DOCS / "environments"
CARDS_OUT = DOCS / "datasets" / "published"
_ROLE = re.compile(r":(class|func|meth|mod|attr|data|obj|exc):`")


def entry_point(env_id: str) -> str:
    return {**ENV_ENTRY_POINTS, **EXTRA_ENV_ENTRY_POINTS}[env_id]


def to_myst(text: str) -> str:
    """Docstring Markdown -> MyST: reST roles (``:class:`X```) become MyST roles (``{py:class}`X```)."""
    return _ROLE.sub(r"{py:\1}`", text)


def summary(env_id: str) -> str:
    """The table at the top of a page, from the domain class and the measured reference scores."""
    domain = env_class(env_id).domain_cls
    rows = [
        ("Entry point", f"`{entry_point(env_id)}`"),
        ("Domain", f"`{domain.name}`"),
        ("Actions it supports", ", ".join(a.name for a in sorted(domain.supported))),
        ("Base harness", " → ".join(action.name for action, _ in domain.base_script)),
        ("Rubric (criterion: weight)", ", ".join(f"`{c}`: {w:g}" for c, w in domain.criteria.items())),
        ("HMS events that apply", ", ".join(sorted(domain.events))),
        ("`max_steps` / cost budget", f"{domain.max_steps} / {domain.cost_budget:g}"),
    ]
    if env_id in ENV_IDS:
        tasks = domain().tasks()
        split = Counter(task.split for task in tasks)
        level = Counter(task.difficulty for task in tasks)
        rows.append(("Tasks (default data)", f"{split['train']} train / {split['eval']} eval"))
        rows.append(("Difficulty", " / ".join(f"{level[d]} {d}" for d in ("easy", "standard", "hard"))))
    scores = reference_table()["scores"].get(env_id)
    if scores is not None:
        ends = f"random {scores['random']:.3f} (normalised 0), expert {scores['expert']:.3f} (normalised 100)"
        rows.append(("Reference scores (mean G, eval protocol)", ends))
    paper = PAPER.get(env_id)
    if paper is not None:
        rows.append(("Paper (Base G / AW G)", f"{paper.base_G:.3f} / {paper.aw_G:.3f}"))
    table = ["| | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)]
    return "\n".join([*table, "", flaw_table(domain)])


def flaw_table(domain) -> str:
    """``Domain.flaws``: each flaw kind of the pools, its class, the check components whose findings name
    it (localised feedback) and what its fix needs gathered (evidence-gated revision)."""
    lines = [
        "Flaw kinds of the artifact pools (`Domain.flaws`, read by the simulated executor):",
        "",
        "| flaw kind | class | named by the findings of | a fix needs |",
        "|---|---|---|---|",
    ]
    for kind, flaw in sorted(domain.flaws.items()):
        named = ", ".join(f"`{c}`" for c in sorted(flaw.named_by)) or "no check"
        lines.append(f"| `{kind}` | {flaw.cls} | {named} | `{flaw.needs}` |")
    return "\n".join(lines)


def page(env_id: str) -> str:
    cls = env_class(env_id)
    doc = inspect.cleandoc(cls.__doc__ or "")
    first, _, body = doc.partition("\n")
    return f"""# {env_id}

{to_myst(first.strip())}

{summary(env_id)}

Headroom of every reference policy on this id beside the others: [Reference policies and
headroom](../policies.md#headroom). Generated from the docstring of `{cls.__module__}.{cls.__qualname__}`
(harness-gym {harness_gym.__version__}).

{to_myst(body.strip())}
"""


def environment_pages() -> dict[str, str]:
    """File name -> text of every environment id's page."""
    return {f"{env_id}.md": page(env_id) for env_id in ALL_ENV_IDS}


def dataset_cards() -> dict[str, str]:
    """File name -> text of the published buffers' index and cards, as ``datasets/build.py`` wrote them."""
    cards = sorted((DOCS.parent / "datasets").glob("*.md"))
    return {("index.md" if card.name == "README.md" else card.name): card.read_text() for card in cards}


def write(out: Path, pages: dict[str, str]) -> list[Path]:
    """Write ``pages`` into ``out``, leaving unchanged files (and their time stamps) alone."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return [out / name for name in pages]


def main() -> list[Path]:
    return write(ENV_OUT, environment_pages()) + write(CARDS_OUT, dataset_cards())


if __name__ == "__main__":
    for path in main():
        print(path)
