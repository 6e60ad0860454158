"""See fivethousand_rl/evaluate.py (installed: `fivethousand evaluate`)."""

import sys

from fivethousand_rl.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
