"""The `cluster` of tests/cluster/test_cluster.py (nimbus and supervisors as processes);
the real ZooKeeper comes from tests/zk_fixtures.py, one server for the whole session."""

from tests.cluster.test_cluster import cluster  # noqa: F401
