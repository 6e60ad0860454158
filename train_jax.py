"""See fivethousand_rl/train_jax.py (installed: `fivethousand train-jax`)."""

import sys

from fivethousand_rl.train_jax import main

if __name__ == "__main__":
    sys.exit(main())
