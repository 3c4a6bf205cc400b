"""score a policy on all eight settings and rank it against the shipped reference results

``harness-gym submit POLICY --name NAME``: ``evaluate_policy(policy, env_id="all")`` from the command line,
then ``harness-gym leaderboard`` of the reference results and the new file. ``POLICY`` is a scripted
policy's name or ``module:factory``, a function ``factory(seed)`` (or ``factory(seed, env_id)``, for a model
per setting) returning what ``evaluate_policy`` plays: an object with ``act(obs, mask, rng) -> int``, a
function ``f(obs, mask) -> int`` (``obs`` the 31 features, ``mask`` the legal actions, the result an action
index 0-6), or a trained d3rlpy algorithm. A factory returning the same object for every seed is one policy
(intervals over episodes, as ``evaluate_policy(policy)``), different objects one model per seed (intervals
over seeds, as the bench's learners): ``harness_gym.evaluation.scoring.from_factory``.

Every setting is played on the reference results' protocol (eval tasks x seeds 0, 1, 2 x 3 rollouts, Base
on the same episodes), with a progress bar and one line per setting as it finishes. The results file
(``--out``, default ``NAME.json``) is written, and the ranked table of every policy is printed. The reference
results are the bench's ``docs/bench/results.json``, shipped in the package (``--reference`` for another).
Finished episodes are kept in ``OUT.partial`` until the file is written, so the same command resumes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness_gym.cli.common import RESUME_HINT, add_engine_args, engine_config, first_line

GENERIC = ("policy", "factory", "make", "make_policy", "make_factory", "get_policy", "load", "load_policy")
"""Attribute names that say nothing about the algorithm: a row is named after the module instead."""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("submit", help=first_line(__doc__))
    parser.add_argument("policy", help="module:factory (called with each seed) or a scripted policy's name")
    parser.add_argument(
        "--name",
        default=None,
        help="the policy's row in the results (default: the module, or the factory's name unless generic)",
    )
    parser.add_argument("--out", default=None, help="results file to write (default NAME.json)")
    parser.add_argument(
        "--reference",
        default=None,
        help="results file to rank against (default: the bench's reference results shipped in the package)",
    )
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="bootstrap replications of the ranking's intervals (default: the bench's, 2000)",
    )
    parser.add_argument(
        "--act",
        default="sample",
        choices=["sample", "greedy"],
        help="a d3rlpy learner's action choice: sample from its legal softmax, or its argmax",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_engine_args(parser)
    parser.set_defaults(func=run)


def default_name(spec: str) -> str:
    """A row name from the policy's spec: ``mymodule:make_policy`` -> ``mymodule``,
    ``pkg.algos:make_cql`` -> ``cql``, a scripted name -> itself."""
    module, sep, attribute = spec.partition(":")
    if not sep:
        return spec
    if attribute in GENERIC:
        return module.rpartition(".")[2]
    return attribute.removeprefix("make_")


def _factory(spec: str):
    """``module:attribute`` imported (the working directory first on the path, as ``python -m`` has it)."""
    import importlib
    import os

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"harness-gym submit: {spec!r}: expected module:factory")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:  # the user's module: whatever importing it raises is named in one line
        raise SystemExit(
            f"harness-gym submit: cannot load {spec!r}: {type(exc).__name__}: {exc}".splitlines()[0]
        ) from None
    if not callable(factory):
        raise SystemExit(f"harness-gym submit: {spec} is not callable (a factory receives the seed)")
    return factory


def _player(spec: str, factory, env_id: str, seeds: tuple[int, ...]):
    """What plays ``env_id``: the factory's policies for the seeds, or the scripted policy of that name."""
    from harness_gym.cli.common import make_policy
    from harness_gym.evaluation.scoring import FactoryError, from_factory

    if factory is None:
        return make_policy(spec, env_id)
    try:
        return from_factory(factory, seeds, env_id)
    except FactoryError as exc:  # the user's factory: name it and the setting, in one line
        cause = exc.cause
        raise SystemExit(
            f"harness-gym submit: {spec} raised for {env_id}: {type(cause).__name__}: {cause}".splitlines()[0]
        ) from None


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from harness_gym.envs.registry import ENV_IDS
    from harness_gym.evaluation import results
    from harness_gym.evaluation.scoring import (
        REFERENCE_RESULTS,
        PolicyError,
        SuiteScore,
        evaluate_policy,
        protocol_seeds,
    )

    name = args.name or default_name(args.policy)
    reference_path = Path(args.reference) if args.reference else REFERENCE_RESULTS
    reference = results.load(reference_path)  # unreadable or off-schema: one line (ResultsError)
    if name in reference["policies"]:
        raise SystemExit(
            f"harness-gym submit: the reference results already have a policy {name!r}; choose --name"
        )
    if args.reps is not None and args.reps < 1:
        raise SystemExit(f"harness-gym submit: --reps must be at least 1, got {args.reps}")
    out = Path(args.out or f"{name}.json")
    if not out.parent.is_dir():
        raise SystemExit(f"harness-gym submit: cannot write {out}: no directory {out.parent}")
    protocol = reference["protocol"]
    seeds, rollouts, split = tuple(protocol["seeds"]), int(protocol["rollouts"]), protocol["split"]
    factory = _factory(args.policy) if ":" in args.policy else None
    checkpoint = Path(f"{out}.partial")
    RESUME_HINT[:] = [f"finished episodes are kept in {checkpoint}; rerun the same command to resume"]
    total = sum(2 * len(protocol_seeds(env_id, seeds, rollouts, split)) for env_id in ENV_IDS)
    scores = []
    with tqdm(total=total, desc=f"submit {name}", unit="ep", disable=args.quiet) as bar:
        for env_id in ENV_IDS:
            bar.set_postfix_str(env_id)
            try:
                score = evaluate_policy(
                    _player(args.policy, factory, env_id, seeds),
                    env_id,
                    seeds=seeds,
                    rollouts=rollouts,
                    split=split,
                    act=args.act,
                    name=name,
                    engine=engine_config(args),
                    checkpoint=checkpoint / env_id,
                    on_episode=lambda record: bar.update(1),
                )
            except PolicyError as exc:
                raise SystemExit(f"harness-gym submit: {env_id}: {exc}") from None
            scores.append(score)
            d = score.delta_G
            tqdm.write(
                f"{env_id:<24} G {score.G:.3f}  score {score.score.estimate:6.1f}  "
                f"ΔG vs Base {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"
            )
    SuiteScore(tuple(scores)).write_results(out)
    print(f"wrote {out}")
    import shutil

    shutil.rmtree(checkpoint, ignore_errors=True)
    from harness_gym.bench.leaderboard import leaderboard, markdown, ranking

    sources = [str(reference_path) if args.reference else "reference results", str(out)]
    doc = leaderboard([reference_path, out], args.reps, args.reps)
    print(markdown(doc, sources), end="")
    row = next((r for r in ranking(doc) if r["policy"] == name), None)
    if row is not None:
        iqm = row["iqm"]
        interval = f" [{iqm['ci_low']:.1f}, {iqm['ci_high']:.1f}]" if iqm.get("ci_low") is not None else ""
        print(
            f"{name}: rank {row['rank']} of {len(doc['aggregate']['metrics'])}, IQM {iqm['estimate']:.1f}"
            f"{interval} (intervals over {row['interval']})"
        )
    return 0
