"""A local SparkSession whose JVM keeps its scratch files (block manager, artifacts, native
libraries) in a directory the caller owns, so a killed or finished driver leaves nothing in /tmp."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def local_session(app_name: str, scratch: Path, settings: Mapping[str, str] | None = None) -> Any:
    """A local[2] session with Leveret's source and sink registered and `settings` on top;
    scratch must exist."""
    # Imported here: the test modules skip (or, under CI, fail) when pyspark is missing.
    from pyspark.sql import SparkSession

    from leveret.spark import register

    # Spark's Python workers run this interpreter (with Leveret), not the system's.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        # spark.local.dir defaults to java.io.tmpdir: one setting moves every scratch file.
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch}")
    )
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session
