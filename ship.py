"""See fivethousand_rl/ship.py (installed: `fivethousand ship`)."""

import sys

from fivethousand_rl.ship import main

if __name__ == "__main__":
    sys.exit(main())
