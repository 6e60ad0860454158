"""See fivethousand_rl/train_planner.py (installed: `fivethousand train-planner`)."""

import sys

from fivethousand_rl.train_planner import main

if __name__ == "__main__":
    sys.exit(main())
