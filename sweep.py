"""See fivethousand_rl/sweep.py (installed: `fivethousand sweep`)."""

import sys

from fivethousand_rl.sweep import main

if __name__ == "__main__":
    sys.exit(main())
