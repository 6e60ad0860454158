"""``python -m fivethousand_rl.agents.best_response``: the command line
(``fivethousand_rl.agents.best_response.cli``)."""

import sys

from fivethousand_rl.agents.best_response.cli import main

sys.exit(main())
