"""The benchmark: buffers, training of every registered algorithm, evaluation, OPE and the report.

``runner`` runs it (``harness-gym bench``), ``algorithms`` is the registry through which learners join
it (``baselines`` registers its own), ``ope`` and ``fqe`` estimate policies from the buffer alone,
``report`` and ``viewer`` write what a run found. torch, d3rlpy and minari load only when a run starts.
"""

from harness_gym.bench.runner import BenchConfig, quick, run

__all__ = ["BenchConfig", "quick", "run"]
