"""list, build, verify, publish and pull harness datasets

``harness-gym datasets``: one row per harness dataset under the datasets directory (an unreadable file is
named and the others still listed). Subcommands: ``build`` a published tier, ``verify`` local copies against
the manifest (a missing copy is reported, never built, unless ``--rebuild`` asks for a fresh build),
``publish`` to and ``pull`` from a Minari remote (``hf://`` needs the ``[hub]`` extra), ``combine`` datasets
of one env id. The manifest is the one shipped in the package (``harness_gym/data/MANIFEST.json``, a copy
of the checkout's ``datasets/MANIFEST.json``) unless ``--manifest`` names another.
"""

from __future__ import annotations

import argparse
import sys

from harness_gym.cli.common import first_line


def _tier_names() -> list[str]:
    from harness_gym.datasets.tiers import TIERS

    return list(TIERS)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("datasets", help=first_line(__doc__))
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.set_defaults(func=run)
    commands = parser.add_subparsers(dest="datasets_command")
    root = {"default": argparse.SUPPRESS, "help": "datasets directory (default: Minari's)"}
    manifest = {"default": None, "help": "manifest file (default: the one shipped in the package)"}

    combine = commands.add_parser(
        "combine", help="combine datasets of one env into a new one, keeping the harness metadata"
    )
    combine.add_argument("new_id", help="id of the combined dataset, harness/<domain>/<name>-v<N>")
    combine.add_argument("sources", nargs="+", help="ids of the datasets to combine, in order")
    combine.add_argument("--root", **root)
    combine.add_argument("--overwrite", action="store_true", help="replace an existing dataset of that id")

    build = commands.add_parser(
        "build", help="build published tiers deterministically (harness/<domain>/<tier>-v0)"
    )
    build.add_argument("--env", nargs="+", required=True, help="env ids, or 'all'")
    tiers = ", ".join(_tier_names())
    build.add_argument("--tier", nargs="+", required=True, help=f"tiers, or 'all': {tiers}")
    build.add_argument("--root", **root)
    build.add_argument("--workers", type=int, default=1, help="processes (the data do not depend on it)")
    build.add_argument(
        "--episodes-per-task",
        type=int,
        default=None,
        help="a smaller build for a quick look (default 20, the published size; others match no manifest)",
    )
    build.add_argument("--manifest", **manifest)
    build.add_argument("--quiet", action="store_true", help="no progress bar")

    verify = commands.add_parser(
        "verify", help="check local copies against the manifest (none given: every local published copy)"
    )
    verify.add_argument("ids", nargs="*", help="published ids (default: every local copy of one)")
    verify.add_argument(
        "--all", action="store_true", help="every id in the manifest (those without a local copy: MISSING)"
    )
    verify.add_argument(
        "--rebuild",
        action="store_true",
        help="build each id afresh in a temporary directory and check that build (local copies untouched)",
    )
    verify.add_argument("--root", **root)
    verify.add_argument("--workers", type=int, default=1, help="processes of a rebuild")
    verify.add_argument("--manifest", **manifest)
    verify.add_argument("--quiet", action="store_true", help="no progress bar for --rebuild")

    publish = commands.add_parser(
        "publish", help="upload local datasets to a Minari remote (minari.upload_dataset)"
    )
    publish.add_argument("ids", nargs="+", help="dataset ids")
    publish.add_argument(
        "--remote", required=True, help="Minari remote: hf://ORG (the repository ORG/harness)"
    )
    publish.add_argument("--token", default=None, help="write token (default $HF_TOKEN or the stored login)")
    publish.add_argument("--root", **root)
    publish.add_argument("--manifest", **manifest)

    pull = commands.add_parser(
        "pull", help="download from a Minari remote, else build locally; verify against the manifest"
    )
    pull.add_argument("ids", nargs="*", help="published ids")
    pull.add_argument("--all", action="store_true", help="every id in the manifest")
    pull.add_argument("--remote", default=None, help="Minari remote, hf://ORG (default $MINARI_REMOTE)")
    pull.add_argument("--force", action="store_true", help="replace a local copy")
    pull.add_argument("--root", **root)
    pull.add_argument("--workers", type=int, default=1, help="processes of a local build")
    pull.add_argument("--manifest", **manifest)
    pull.add_argument("--quiet", action="store_true", help="no progress lines or bar")


def run(args: argparse.Namespace) -> int:
    command = args.datasets_command
    if command is not None:
        return {"combine": _combine, "build": _build, "verify": _verify, "publish": _publish, "pull": _pull}[
            command
        ](args)
    from harness_gym.datasets.collect import dataset_root, dataset_stats
    from harness_gym.datasets.files import DatasetError, local_ids, open_dataset

    root = dataset_root(args.root)
    ids = local_ids(root)
    if not ids:
        print(f"no harness datasets under {root}")
        return 0
    head = ("dataset", "env", "behaviour", "episodes", "steps", "mean G", "slack")
    print("{:<36} {:<24} {:<13} {:>8} {:>7} {:>7} {:>6}".format(*head))
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
            f"{dataset_id:<36} {env_id:<24} {behaviour:<13} {stats['episodes']:>8} {stats['steps']:>7} "
            f"{stats['mean_G']:>7.3f} {stats['buffer_slack']:>6.3f}"
        )
    if unreadable:
        print(f"{unreadable} of {len(ids)} datasets could not be read", file=sys.stderr)
    return 1 if unreadable else 0


def _combine(args: argparse.Namespace) -> int:
    from harness_gym.datasets.combine import combine

    path = combine(args.sources, args.new_id, root=args.root, overwrite=args.overwrite)
    print(f"wrote {args.new_id} to {path} ({' + '.join(args.sources)})")
    return 0


def _ids(args: argparse.Namespace, entries: dict, local_default: bool = False) -> list[str]:
    """The ids named, or ``--all`` (every id in the manifest); with ``local_default`` and neither, every
    local copy of a published id."""
    from harness_gym.datasets.files import DatasetError, local_ids
    from harness_gym.datasets.manifest import known_ids

    if args.all and args.ids:
        raise DatasetError("give dataset ids or --all (not both)")
    if args.all:
        return sorted(entries)
    if args.ids:
        return known_ids(entries, args.ids)
    if not local_default:
        raise DatasetError("give dataset ids or --all")
    return [dataset_id for dataset_id in local_ids(args.root) if dataset_id in entries]


def _manifest(args: argparse.Namespace, required: bool = True) -> dict:
    from harness_gym.datasets import manifest
    from harness_gym.datasets.files import DatasetError

    try:
        return manifest.load(args.manifest)
    except DatasetError:
        if required:
            raise
        return {}


def _build(args: argparse.Namespace) -> int:
    from harness_gym.datasets import manifest, tiers
    from harness_gym.envs.registry import ENV_IDS

    env_ids = list(ENV_IDS) if args.env == ["all"] else args.env
    names = list(tiers.TIERS) if args.tier == ["all"] else args.tier
    ids = [(env_id, tier, tiers.tier_id(env_id, tier)) for env_id in env_ids for tier in names]
    entries = _manifest(args, required=False)
    full = args.episodes_per_task in (None, tiers.EPISODES_PER_TASK)
    for env_id, tier, dataset_id in ids:
        report = tiers.build(
            env_id,
            tier,
            root=args.root,
            workers=args.workers,
            episodes_per_task=args.episodes_per_task or tiers.EPISODES_PER_TASK,
            show_progress=not args.quiet,
        )
        found = manifest.entry(dataset_id, args.root)
        if not full:
            status = "a reduced build (no manifest entry)"
        elif dataset_id not in entries:
            status = "not in the manifest"
        else:
            diffs = manifest.differences(entries[dataset_id], found)
            status = "matches the manifest" if not diffs else "DIFFERS from the manifest: " + "; ".join(diffs)
        counts = f"{found['episodes']} episodes, {found['steps']} steps, mean G {found['mean_G']:.3f}"
        print(f"{dataset_id}: {counts}, sha256 {found['sha256'][:12]}, {report.seconds:.1f}s; {status}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import dataset_root
    from harness_gym.datasets.manifest import verify

    entries = _manifest(args)
    ids = _ids(args, entries, local_default=True)
    if not ids:
        root = dataset_root(args.root)
        print(f"no local copies of published datasets under {root} (verify --all lists them)")
        return 0
    failed = 0
    for dataset_id in ids:
        if args.rebuild and not args.quiet:
            print(f"{dataset_id}: building afresh to check", file=sys.stderr, flush=True)
        progress = not args.quiet
        verdict = verify(dataset_id, entries[dataset_id], args.root, args.rebuild, args.workers, progress)
        print(verdict.line, flush=True)
        failed += not verdict.ok
    if failed:
        print(f"{failed} of {len(ids)} dataset(s) missing or differing from the manifest", file=sys.stderr)
    return 1 if failed else 0


def _publish(args: argparse.Namespace) -> int:
    from harness_gym.datasets.remote import publish

    publish(args.ids, args.remote, args.token, args.root, expected=_manifest(args, required=False))
    return 0


def _pull(args: argparse.Namespace) -> int:
    import os

    from harness_gym.datasets.remote import REMOTE_ENV, pull

    entries = _manifest(args)
    remote = args.remote or os.environ.get(REMOTE_ENV)
    failed = 0

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    pulled_ids = pull(
        _ids(args, entries),
        remote,
        entries,
        args.root,
        args.workers,
        args.force,
        log=None if args.quiet else log,
        show_progress=not args.quiet,
    )
    for pulled in pulled_ids:
        line = pulled.verdict.line if pulled.verdict is not None else f"??   {pulled.dataset_id}"
        print(f"{line}  [{pulled.source}]", flush=True)
        failed += pulled.verdict is not None and not pulled.verdict.ok
    return 1 if failed else 0
