"""Running untrusted, model-written Python with limits (``runner``)."""

from harness_gym.sandbox.runner import SandboxLimits, SandboxResult, run_python

__all__ = ["SandboxLimits", "SandboxResult", "run_python"]
