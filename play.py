"""See fivethousand_rl/play.py (installed: `fivethousand play`)."""

import sys

from fivethousand_rl.play import main

if __name__ == "__main__":
    sys.exit(main())
