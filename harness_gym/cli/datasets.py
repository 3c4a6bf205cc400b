"""list local harness datasets with their statistics

``harness-gym datasets``: one row per harness dataset under the datasets directory (an unreadable file is
named and the others still listed); ``harness-gym datasets combine`` joins datasets of one env id.
"""

from __future__ import annotations

import argparse
import sys

from harness_gym.cli.common import first_line


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("datasets", help=first_line(__doc__))
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.set_defaults(func=run)
    commands = parser.add_subparsers(dest="datasets_command")
    combine = commands.add_parser(
        "combine", help="combine datasets of one env into a new one, keeping the harness metadata"
    )
    combine.add_argument("new_id", help="id of the combined dataset, harness/<domain>/<name>-v<N>")
    combine.add_argument("sources", nargs="+", help="ids of the datasets to combine, in order")
    combine.add_argument("--root", default=argparse.SUPPRESS, help="datasets directory (default: Minari's)")
    combine.add_argument("--overwrite", action="store_true", help="replace an existing dataset of that id")


def run(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import dataset_root, dataset_stats
    from harness_gym.datasets.files import DatasetError, local_ids, open_dataset

    if args.datasets_command == "combine":
        return _combine(args)
    root = dataset_root(args.root)
    ids = local_ids(root)
    if not ids:
        print(f"no harness datasets under {root}")
        return 0
    head = ("dataset", "env", "behaviour", "episodes", "steps", "mean G", "slack")
    print("{:<36} {:<24} {:<12} {:>8} {:>7} {:>7} {:>6}".format(*head))
    unreadable = 0
    for dataset_id in ids:
        try:
            dataset = open_dataset(dataset_id, root)
            stats = dataset_stats(dataset)
        except (DatasetError, OSError, KeyError) as exc:  # a corrupt file: name it, list the others
            unreadable += 1
            print(f"{dataset_id:<36} unreadable: {str(exc).splitlines()[0]}")
            continue
        meta = dataset.storage.metadata
        env_id, behaviour = meta.get("harness_env_id", "?"), meta.get("algorithm_name", "?")
        print(
            f"{dataset_id:<36} {env_id:<24} {behaviour:<12} {stats['episodes']:>8} {stats['steps']:>7} "
            f"{stats['mean_G']:>7.3f} {stats['buffer_slack']:>6.3f}"
        )
    if unreadable:
        print(f"{unreadable} of {len(ids)} datasets could not be read", file=sys.stderr)
    return 1 if unreadable else 0


def _combine(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import CollectError
    from harness_gym.datasets.combine import combine
    from harness_gym.datasets.files import DatasetError

    try:
        path = combine(args.sources, args.new_id, root=args.root, overwrite=args.overwrite)
    except (CollectError, DatasetError) as exc:
        raise SystemExit(f"harness-gym datasets combine: {exc}") from None
    print(f"wrote {args.new_id} to {path} ({' + '.join(args.sources)})")
    return 0
