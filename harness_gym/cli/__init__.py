"""The ``harness-gym`` command line: ``main`` builds the parser, one module per command group."""

from harness_gym.cli.main import main

__all__ = ["main"]
