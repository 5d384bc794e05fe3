"""The Spark spout against a real standalone Spark cluster (`spark.master=spark://...`,
the production setup of docs/spark.md): a master and a worker started from pyspark's
own `spark-class`, and the word count of topologies/spark_wordcount.py run on them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.machine import missing
from tests.messaging.conftest import free_port
from tests.spark.conftest import have_java
from tests.spark.test_spark_wordcount import expected_counts, run

pytestmark = pytest.mark.slow


class SparkDaemon:
    """One of Spark's standalone daemons (Master, Worker), its log in a file."""

    def __init__(self, role: str, arguments: list[str], tmp_path: Path) -> None:
        import pyspark

        home = Path(pyspark.__file__).parent
        self.log = tmp_path / f"spark-{role.lower()}.log"
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_WORKER_DIR": str(tmp_path / "work"),
               "SPARK_LOG_DIR": str(tmp_path), "SPARK_NO_DAEMONIZE": "1"}
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(home / "bin" / "spark-class"), f"org.apache.spark.deploy.{role.lower()}.{role}",
                 *arguments], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def wait_for(self, line: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while line not in self.log.read_text(errors="replace"):
            assert self.process.poll() is None, f"exited:\n{self.log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {line!r} in {timeout} s:\n{self.log.read_text()[-3000:]}"
            time.sleep(0.2)  # polling another process's log: nothing to wait on

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, SparkDaemon, SparkDaemon]]:
    """(master URL, master, worker): one worker with one core and 1 GiB."""
    if not have_java():
        missing("no Java runtime: Spark's standalone daemons cannot start")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[SparkDaemon] = []
    try:
        master = SparkDaemon("Master", ["--host", "127.0.0.1", "--port", str(port),
                                        "--webui-port", str(free_port())], tmp_path)
        daemons.append(master)
        master.wait_for(f"Starting Spark master at {url}")
        worker = SparkDaemon("Worker", [url, "--host", "127.0.0.1", "--port", str(free_port()),
                                        "--webui-port", str(free_port()), "--cores", "1",
                                        "--memory", "1g"], tmp_path)
        daemons.append(worker)
        worker.wait_for(f"Successfully registered with master {url}")
        yield url, master, worker
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.mark.timeout(300)  # three JVMs start on a machine the other tests share
def test_the_word_count_streams_a_dataframe_computed_on_a_standalone_cluster(
        spark: Any, standalone: tuple[str, SparkDaemon, SparkDaemon], tmp_path: Path) -> None:
    url, master, worker = standalone
    lines, partitions = 2000, 4
    output = tmp_path / "counts.json"
    result = run(tmp_path, "-o", f"spark.master={url}", "-o", f"spark_wordcount.lines={lines}",
                 "-o", f"spark_wordcount.partitions={partitions}",
                 "-o", f"spark_wordcount.output={output}", workers=1, timeout=180)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "every spout is exhausted" in result.stdout
    assert json.loads(output.read_text()) == expected_counts(spark, lines, partitions)
    # the rows were computed by an executor of the cluster's worker, not in the run
    assert "Registering app storm-zmq SparkWordCount" in master.log.read_text()
    assert "Asked to launch executor app-" in worker.log.read_text()
