"""``python -m kata``: the ``kata`` command."""

import sys

from kata.commands import main

sys.exit(main())
