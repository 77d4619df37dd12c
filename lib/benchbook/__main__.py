"""``python -m benchbook …``: the command line without the console script (e.g. in an engine's own
environment, where benchbook is on PYTHONPATH but not installed: ``python -m benchbook capture …``)."""

import sys

from benchbook.commands.cli import main

sys.exit(main())
