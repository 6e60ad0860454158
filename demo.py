"""See fivethousand_rl/demo.py (installed: `fivethousand demo`)."""

import sys

from fivethousand_rl.demo import main

if __name__ == "__main__":
    sys.exit(main())
