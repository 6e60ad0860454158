"""See fivethousand_rl/export.py (installed: `fivethousand export`)."""

import sys

from fivethousand_rl.export import main

if __name__ == "__main__":
    sys.exit(main())
