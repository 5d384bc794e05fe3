"""Fixtures shared across test directories. The real ZooKeeper server is one per
session for the whole suite (tests/zk_fixtures.py), whichever directory uses it."""

pytest_plugins = ["tests.zk_fixtures"]
