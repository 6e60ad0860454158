"""``python -m agents.best_response``: the command line (``agents.best_response.cli``)."""

import sys

from agents.best_response.cli import main

sys.exit(main())
