"""One local SparkSession (local[2]) for the whole of tests/spark in the pytest
process; the spouts under test share it (getOrCreate) and never stop it."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.machine import missing


def have_java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(home and os.access(os.path.join(home, "bin", "java"), os.X_OK)) or bool(shutil.which("java"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if not have_java():
        missing("no Java runtime: Spark cannot start")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("storm-zmq tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    yield session
    session.stop()
