"""The off-policy evaluation section: each estimator's error against the true value, and the Q-learners'
own value estimates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness_gym.bench.report.access import BC, _get, _label, _policy
from harness_gym.bench.report.format import DASH, _mean, _missing, fmt_num, fmt_signed, markdown_table

OPE_ESTIMATORS = {"fqe": "FQE", "is": "IS", "wis": "WIS", "pdis": "PDIS", "dr": "DR"}
"""Keys of ``out["ope"]`` entries (``harness_gym.bench.runner.off_policy_evaluation``) and their labels."""
G_MAX = 1.0
"""The highest G any task can score (``harness_gym.envs.env``: G lies in [0, 1])."""


def _ope_entries(setting: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(policy, seed, entry) of every OPE entry with a true value."""
    return [
        (name, seed, entry)
        for name, per_seed in (setting.get("ope") or {}).items()
        for seed, entry in per_seed.items()
        if not _missing(entry.get("true"))
    ]


def ope_errors(entries: Sequence[tuple[str, str, Mapping[str, Any]]], key: str) -> dict[str, Any]:
    """Mean absolute error of estimator ``key`` against the truth over (policy, seed) entries where it
    is defined, and Spearman's rho across policies of the seed means (estimate vs truth).

    ``{"mae", "rho", "n", "undefined"}``; ``rho`` is None with fewer than 2 policies or a constant side."""
    from scipy.stats import spearmanr

    defined = [(name, e[key], e["true"]) for name, _, e in entries if not _missing(e.get(key))]
    mae = _mean(abs(est - true) for _, est, true in defined)
    by_policy: dict[str, list[tuple[float, float]]] = {}
    for name, est, true in defined:
        by_policy.setdefault(name, []).append((est, true))
    points = [tuple(sum(v) / len(v) for v in zip(*pairs, strict=True)) for pairs in by_policy.values()]
    rho = None
    if len(points) >= 2 and len({p[0] for p in points}) > 1 and len({p[1] for p in points}) > 1:
        rho = float(spearmanr([p[0] for p in points], [p[1] for p in points]).statistic)
    return {"mae": mae, "rho": rho, "n": len(points), "undefined": len(entries) - len(defined)}


def ope_tables(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    heading = "## Off-policy evaluation"
    per_setting = [(e, _ope_entries(s)) for e, s in settings]
    per_setting = [(e, entries) for e, entries in per_setting if entries]
    if not per_setting:
        return f"{heading}\n\n_No off-policy evaluation in these results._"
    rows = [(_label(e), entries) for e, entries in per_setting]
    pooled = [(f"{e}:{name}", seed, entry) for e, entries in per_setting for name, seed, entry in entries]
    mae_rows, rho_rows = [], []
    for label, entries in [*rows, ("Pooled", pooled)]:
        errors = {k: ope_errors(entries, k) for k in OPE_ESTIMATORS}
        mae_cells = [
            fmt_num(err["mae"]) + (f" ({err['undefined']} undef.)" if err["undefined"] else "")
            for err in errors.values()
        ]
        unsupported = sum(not _missing(e.get("ess")) and e["ess"] == 0 for _, _, e in entries)
        truth_se = _mean(e.get("true_se") for _, _, e in entries)
        mae_rows.append(
            [label, str(len(entries)), *mae_cells, fmt_num(truth_se), f"{unsupported}/{len(entries)}"]
        )
        rho_rows.append(
            [label, str(errors["fqe"]["n"]), *(fmt_signed(err["rho"], 2) for err in errors.values())]
        )
    support_rows = []
    for label, keep in (("ESS > 0", lambda x: x > 0), ("ESS = 0", lambda x: x == 0)):
        subset = [t for t in pooled if not _missing(t[2].get("ess")) and keep(t[2]["ess"])]
        if subset:
            cells = [fmt_num(ope_errors(subset, k)["mae"]) for k in OPE_ESTIMATORS]
            support_rows.append([label, str(len(subset)), *cells])
    mean_rho = [_mean(ope_errors(entries, k)["rho"] for _, entries in rows) for k in OPE_ESTIMATORS]
    rho_rows.append(["Mean of settings", DASH, *(fmt_signed(r, 2) for r in mean_rho)])
    labels = list(OPE_ESTIMATORS.values())
    intro = (
        "Every trained acting policy (algorithm x seed x mode) estimated from the buffer by each estimator "
        "and set beside its true value: the policy played once on every train-split task, the tasks the "
        "buffer's episodes start from (`Truth SE`: the standard error of that mean, the floor below which "
        "an error cannot be told from noise). FQE's Q-function is DR's model. `ESS = 0`: no logged "
        "episode follows the policy (IS, PDIS give 0 and WIS is undefined). Spearman's ρ ranks the "
        "policies by their mean over seeds; the pooled row ranks (setting, policy) pairs together, so "
        "it also credits telling settings apart."
    )
    parts = [
        heading,
        "",
        intro,
        "",
        "Mean absolute error against the true value (G units):",
        "",
        markdown_table(["Setting", "Runs", *labels, "Truth SE", "ESS = 0"], mae_rows),
        "",
        "Pooled mean absolute error, split by whether some logged episode follows the policy:",
        "",
        markdown_table(["Runs", "n", *labels], support_rows),
        "",
        "Spearman rank correlation with the true value across policies:",
        "",
        markdown_table(["Setting", "Policies", *labels], rho_rows),
        "",
        _own_q_table(settings),
    ]
    return "\n".join(parts)


def _seed_mean(per_seed: Mapping[str, Mapping[str, Any]], key: str) -> float | None:
    return _mean(entry.get(key) for entry in per_seed.values())


def _own_q_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Each Q-learner's own value of its start state beside the truth and FQE, and why BCQ / CQL fall
    below BC where they do, read from these numbers."""
    headers = ["Setting", "Algorithm", "Own Q at start", "True", "Own − true", "FQE", "Eval G", "BC eval G"]
    rows, notes = [], []
    for e, s in settings:
        bc_G = _get(_policy(s, BC), "G")
        for name, per_seed in (s.get("ope") or {}).items():
            own, true = _seed_mean(per_seed, "own_q"), _seed_mean(per_seed, "true")
            if own is None:
                continue
            fqe, policy = _seed_mean(per_seed, "fqe"), _policy(s, name)
            gap = None if true is None else own - true
            rows.append(
                [_label(e), name, fmt_num(own), fmt_num(true), fmt_signed(gap), fmt_num(fqe),
                 fmt_num(_get(policy, "G")), fmt_num(bc_G)]
            )  # fmt: skip
            if name in ("bcq", "cql"):
                notes.append(_below_bc_note(e, name, policy, bc_G, own, true, fqe, per_seed))
    if not rows:
        return "_No Q-learner with its own value estimates in these results._"
    explained = [n for n in notes if n]
    if explained:
        verdict = " ".join(explained)
    elif notes:
        verdict = "BCQ and CQL are nowhere below BC by more than their interval."
    else:
        verdict = "Neither BCQ nor CQL is in these results."
    return "\n".join(
        [
            "Q-learners' own value estimates vs true value (means over seeds; `Own Q at start`: the "
            "learner's Q of the actions its acting policy takes at the buffer's start states; `Eval G`: "
            "the evaluation split, as in the tables above):",
            "",
            markdown_table(headers, rows, left=2),
            "",
            verdict,
        ]
    )


def _below_bc_note(
    env_id: str,
    name: str,
    policy: Mapping[str, Any] | None,
    bc_G: float | None,
    own: float,
    true: float | None,
    fqe: float | None,
    per_seed: Mapping[str, Mapping[str, Any]],
) -> str:
    """A sentence when ``name`` is below BC by more than its ΔG interval's half-width, else ''."""
    G, low, high = (_get(policy, k) for k in ("G", "ci_low", "ci_high"))
    if any(_missing(x) for x in (G, low, high, bc_G, true)):
        return ""
    half = (high - low) / 2
    if bc_G - G <= half:
        return ""
    se = _mean(entry.get("true_se") for entry in per_seed.values()) or 0.0
    gap = own - true
    head = (
        f"{_label(env_id)}: {name} (eval G {G:.3f}) is below BC ({bc_G:.3f}) by {bc_G - G:.3f}, more than "
        f"its interval (±{half:.3f})."
    )
    ess = [entry.get("ess") for entry in per_seed.values()]
    support = (
        " No logged episode follows its policy (ESS 0 on every seed), so the buffer cannot value it either."
        if ess and all(x == 0 for x in ess)
        else ""
    )
    if abs(gap) <= 2 * se:
        return (
            f"{head} Its own Q at the start state ({own:.3f}) is within two standard errors of its true "
            f"value on the train tasks ({true:.3f} ± {se:.3f}): the Q-function is right about its own "
            f"policy there, so a wrong Q-function does not explain the shortfall.{support}"
        )
    direction = "overestimates" if gap > 0 else "underestimates"
    beyond = f", above {G_MAX:g}, the highest G a task can score" if own > G_MAX else ""
    in_se = f", {abs(gap) / se:.0f} standard errors of the truth" if se else ""
    return (
        f"{head} Its Q-function {direction} what its policy achieves: own Q {own:.3f}{beyond}, against a "
        f"true value of {true:.3f} on the train tasks ({gap:+.3f}{in_se}; FQE of the same policy: "
        f"{fmt_num(fqe)}).{support}"
    )
