"""train an offline controller on a harness dataset

``harness-gym train``: a registered algorithm (``harness_gym.policies.algorithms``) or ``module:attribute``
trained on one dataset; the model is saved as a d3rlpy learnable with its provenance.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import first_line


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("train", help=first_line(__doc__))
    parser.add_argument(
        "--algo",
        required=True,
        help="a registered algorithm (baselines: awr | awr-converged | bc | bc-converged | iql | bc-d3rlpy | "
        "cql | bcq | dqn | double-dqn | sac) or module:attribute",
    )
    parser.add_argument("--dataset", required=True, help="dataset id, e.g. harness/coding/mixed-v0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--steps", type=int, default=None, help="gradient steps (default: the budget in baselines/budgets.py)"
    )
    parser.add_argument("--out", required=True, help="where to save the d3rlpy learnable (.d3)")
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.add_argument(
        "--token-price",
        type=float,
        default=0.0,
        help="train on the rewards at this price (G per thousand executor tokens), relabelled from the "
        "dataset's per-step tokens (default 0: the rewards as stored)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
    from harness_gym.datasets.files import DatasetError, open_dataset
    from harness_gym.evaluation.model_files import Provenance, save_model
    from harness_gym.policies.algorithms import TrainingData
    from harness_gym.policies.algorithms import get as get_algorithm

    quiet_d3rlpy()
    try:
        algorithm = get_algorithm(args.algo)
    except ValueError as exc:
        raise SystemExit(f"harness-gym train: {exc}") from None
    try:
        dataset = open_dataset(args.dataset, args.root)
    except DatasetError as exc:
        raise SystemExit(f"harness-gym train: {exc}") from None
    env_id = dataset.storage.metadata.get("harness_env_id")
    if env_id is None:
        raise SystemExit(
            f"harness-gym train: {args.dataset!r} is not a harness-gym dataset (no harness_env_id)"
        )
    episodes = None
    if args.token_price:
        from harness_gym.datasets.pricing import relabelled

        try:
            episodes = relabelled(dataset, args.token_price)
        except ValueError as exc:  # a bad price, or a dataset without per-step tokens
            raise SystemExit(f"harness-gym train: {exc}") from None
    trained = algorithm.train(
        TrainingData(env_id, dataset, to_d3rlpy(dataset, episodes)), seed=args.seed, n_steps=args.steps
    )
    model = trained.model
    if model is None or not hasattr(model, "grad_step"):
        raise SystemExit(f"harness-gym train: {args.algo} produced no d3rlpy model to save")
    try:
        layout = dataset.spec.env_spec.kwargs.get("obs_layout", "v1")
        provenance = Provenance.on_layout(
            env_id, args.dataset, algorithm.name, args.seed, layout, args.token_price
        )
        save_model(model, args.out, provenance)
    except OSError as exc:
        raise SystemExit(f"harness-gym train: cannot write {args.out}: {exc.strerror or exc}") from None
    steps = model.grad_step
    print(f"trained {algorithm.name} (seed {args.seed}, {steps} steps) on {args.dataset}; saved {args.out}")
    return 0
