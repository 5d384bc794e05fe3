"""Spark as a source of tuples: `SparkSpout` streams a DataFrame's partitions into a
topology (docs/spark.md). pyspark is imported only when a spout starts."""

from storm_zmq.spark.ledger import PartitionLedger, partitions_for_task, task_index
from storm_zmq.spark.session import SparkSpoutError
from storm_zmq.spark.spout import ListFetcher, SparkSpout

__all__ = [
    "ListFetcher",
    "PartitionLedger",
    "SparkSpout",
    "SparkSpoutError",
    "partitions_for_task",
    "task_index",
]
