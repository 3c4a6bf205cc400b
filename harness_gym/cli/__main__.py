"""``python -m harness_gym.cli``: the same as the ``harness-gym`` command."""

import sys

from harness_gym.cli.main import main

sys.exit(main())
