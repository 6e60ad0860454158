"""Test-session setup: a fresh solver cache, so tests never read a stale or foreign one."""

import os
import tempfile

from agents.optimal import CACHE_ENV

os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="fivethousand-test-cache-")
