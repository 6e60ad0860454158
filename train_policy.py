"""See fivethousand_rl/train_policy.py (installed: `fivethousand train-policy`)."""

import sys

from fivethousand_rl.train_policy import main

if __name__ == "__main__":
    sys.exit(main())
