"""See fivethousand_rl/train.py (installed: `fivethousand train`)."""

import sys

from fivethousand_rl.train import main

if __name__ == "__main__":
    sys.exit(main())
