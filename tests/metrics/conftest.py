"""The real ZooKeeper of the cluster tests (one server per session, a fresh root per
test) and the `cluster` of tests/cluster/test_cluster.py (nimbus and supervisors as
processes), imported so that tests here use the same fixtures."""

from tests.cluster.conftest import make_state, zk_conf, zookeeper  # noqa: F401
from tests.cluster.test_cluster import cluster  # noqa: F401
