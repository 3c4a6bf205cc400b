"""Rollout buffers as Minari datasets: ``collect`` writes them, ``files`` finds and reads them,
``combine`` merges them, ``support`` measures their coverage, ``pricing`` relabels their rewards at a
token price (``relabel``) and ``d3rlpy_bridge`` converts them for d3rlpy with observations aligned.

Dataset format: ``docs/datasets/index.md``.
"""

from harness_gym.datasets.pricing import relabel

__all__ = ["relabel"]
