"""Test-session setup: a fresh solver cache, so tests never read a stale or foreign one,
removed again when the session ends (it holds about 11 MB of solved tables)."""

import logging
import os
import shutil
import tempfile

import pytest

from fivethousand_rl.agents.optimal import CACHE_ENV

TEST_CACHE = tempfile.mkdtemp(prefix="fivethousand-test-cache-")
os.environ[CACHE_ENV] = TEST_CACHE


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(TEST_CACHE, ignore_errors=True)


@pytest.fixture(autouse=True)
def root_logging_restored():
    """A program's main that calls `logging.basicConfig` (webplay's does) leaves the root
    logger a handler on the test's captured stream, closed once the test ends: the next
    record logged in that test process (jax's, say) then writes to a closed file and takes
    pytest's own reporting down with it. Each test gets the root logger back as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):  # a copy: removing shortens the list
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
