"""Publish with confirms from several producers, SIGKILL the node at a random moment, restart:
every confirmed message is there exactly once; anything seen again is marked redelivered."""

from __future__ import annotations

import os
import random
import tempfile
import threading
import time

import pika
import pytest

from tests.support.node import NodeProcess, wait_for

PRODUCERS = 3
PERSISTENT = pika.BasicProperties(delivery_mode=2)


def _produce(
    url: str, round_no: int, producer: int, confirmed: list[str], stop: threading.Event
) -> None:
    try:
        conn = pika.BlockingConnection(pika.URLParameters(url))
        ch = conn.channel()
        ch.confirm_delivery()
        n = 0
        while not stop.is_set() and n < 100_000:
            message_id = f"{round_no}-{producer}-{n}"
            ch.basic_publish("", "crash", message_id.encode(), PERSISTENT)
            confirmed.append(message_id)  # basic_publish returned: the node confirmed it
            n += 1
    except Exception:  # noqa: BLE001 - the node was killed under us: what was confirmed counts
        return


def _run_rounds(rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="leveret-crash-") as data_dir:
        node = NodeProcess(data_dir)
        try:
            node.start()
            setup = pika.BlockingConnection(pika.URLParameters(node.url))
            setup.channel().queue_declare("crash", durable=True)
            setup.close()
            consumed_before: set[str] = set()
            for round_no in range(rounds):
                confirmed: list[str] = []
                stop = threading.Event()
                threads = [
                    threading.Thread(
                        target=_produce, args=(node.url, round_no, p, confirmed, stop), daemon=True
                    )
                    for p in range(PRODUCERS)
                ]
                for thread in threads:
                    thread.start()
                # The random moment is counted from the first confirm: on a loaded machine the
                # producers' connections alone can take longer than the longest moment.
                wait_for(confirmed.__len__, 30)
                time.sleep(rng.uniform(0.2, 1.0))  # the random moment of the crash
                node.kill()
                stop.set()
                for thread in threads:
                    thread.join(10)
                node.start()
                conn = pika.BlockingConnection(pika.URLParameters(node.url))
                ch = conn.channel()
                seen: dict[str, int] = {}
                while True:
                    method, _props, body = ch.basic_get("crash", auto_ack=False)
                    if method is None:
                        break
                    message_id = body.decode()
                    if message_id in consumed_before or message_id in seen:
                        assert method.redelivered, (
                            f"seed {seed} round {round_no}: {message_id} duplicated"
                        )
                    seen[message_id] = seen.get(message_id, 0) + 1
                    ch.basic_ack(method.delivery_tag)
                conn.close()
                missing = [m for m in confirmed if m not in seen]
                assert not missing, (
                    f"seed {seed} round {round_no}: {len(missing)} confirmed lost, e.g. "
                    f"{missing[:3]}"
                )
                consumed_before |= set(seen)
        finally:
            node.cleanup()


def test_confirmed_messages_survive_random_kills() -> None:
    _run_rounds(rounds=3, seed=int(os.environ.get("LEVERET_SEED", "7")))


@pytest.mark.slow
def test_confirmed_messages_survive_fifty_random_kills() -> None:
    _run_rounds(rounds=50, seed=int(os.environ.get("LEVERET_SEED", "11")))
