"""A Spark driver of its own for the kill test: a stream-queue query whose sink keeps each
batch in a file named by its id (overwritten on replay, as a transactional sink would), and
that hangs in batch `hang_at` after writing it, once it has said so, until it is killed.

    python -m tests.spark.replay_driver URL QUEUE CHECKPOINT SINK_DIR HANG_AT SCRATCH_DIR
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from tests.spark.session import local_session

HANG_SECONDS = 300  # bounded: the test kills it long before


def main(url: str, queue: str, checkpoint: str, sink_dir: str, hang_at: int, scratch: str) -> None:
    spark = local_session("leveret-replay-driver", Path(scratch))
    sink = Path(sink_dir)

    def keep(frame: Any, batch: int) -> None:
        rows = [
            [int(row.headers["x-stream-offset"]), bytes(row.body).decode()]
            for row in frame.collect()
        ]
        (sink / f"batch-{batch}.json").write_text(json.dumps(rows))
        if batch == hang_at:
            (sink / "hanging").write_text(str(batch))
            threading.Event().wait(HANG_SECONDS)

    query = (
        spark.readStream.format("leveret")
        .option("uri", url)
        .option("queue", queue)
        .option("stream", "true")
        .option("startingOffsets", "earliest")
        .option("maxMessages", "10")
        .load()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    query.awaitTermination(HANG_SECONDS)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
