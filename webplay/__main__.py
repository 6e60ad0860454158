"""``python -m webplay [--host 127.0.0.1] [--port 8000] [--data DIR]``: serve the page."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

DEFAULT_DATA = Path.home() / ".local" / "share" / "fivethousand-rl" / "web"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m webplay", description="Play 5000 against the bots in a browser."
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"saved games (default {DEFAULT_DATA})"
    )
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error("--port must be 1..65535")
    import uvicorn

    from webplay.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    try:
        app = create_app(args.data.expanduser())
    except OSError as e:
        print(f"error: cannot use the data folder {args.data}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"5000: open http://{args.host}:{args.port}/ (saved games in {args.data})")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
