"""Metrics presentation: what `storm-zmq stats`, `storm-zmq ui` and the Prometheus
endpoint show, built from the workers' reports (docs/observability.md).

- `summary`: pure; worker reports + the topology's layout + errors -> `TopologySummary`
- `graph`: pure; component depths and positions for the drawn topology graph
- `text`, `prometheus`: pure renderings of summaries (a table; exposition format 0.0.4)
- `sources`: the thin I/O shell that reads reports from ZooKeeper or a local run
- `ui`: the HTTP server (page, JSON API, /metrics); page files are in ``static/``
"""

from storm_zmq.metrics.summary import (
    ComponentSummary,
    TopologyLayout,
    TopologySummary,
    WorkerSummary,
    summarize,
)

__all__ = ["ComponentSummary", "TopologyLayout", "TopologySummary", "WorkerSummary", "summarize"]
