"""Playing and scoring policies: the evaluation protocol and its statistics.

``rollout`` plays one episode, ``engine`` many (in flight, resumable), ``protocol`` the paper's
protocol (``evaluate``, ``compare``, paired statistics), ``aggregate`` the across-settings statistics,
``scoring`` one call that scores any policy (``evaluate_policy``, ``protocol_seeds``), ``results`` the
results files (schema, merge), ``reference_scores`` the normalisation table, ``headroom`` the reference
policies per setting, ``shift`` the executor-profile transfer, ``calibrate`` the profile measurement,
``paper`` the paper's reference figures.
"""

from harness_gym.evaluation.protocol import EpisodeResult, compare, evaluate

__all__ = ["EpisodeResult", "compare", "evaluate"]
