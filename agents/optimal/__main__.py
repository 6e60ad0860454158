"""``python -m fivethousand_rl.agents.optimal``: the exact numbers of optimal play (``main`` in the
package). The command lives here, not in the package, because ``agents`` imports the
package first: running it as a script would run it twice (runpy's RuntimeWarning)."""

from fivethousand_rl.agents.optimal import main

raise SystemExit(main())
