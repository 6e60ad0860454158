"""Test-session setup: a fresh solver cache, so tests never read a stale or foreign one,
removed again when the session ends (it holds about 11 MB of solved tables)."""

import os
import shutil
import tempfile

from agents.optimal import CACHE_ENV

TEST_CACHE = tempfile.mkdtemp(prefix="fivethousand-test-cache-")
os.environ[CACHE_ENV] = TEST_CACHE


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)
