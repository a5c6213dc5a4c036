"""Server-generated names, in RabbitMQ's format (amq.gen-…, amq.ctag-…)."""

import base64
import os


def generated_name(prefix: str) -> str:
    """`prefix-` followed by 16 random bytes in unpadded URL-safe base64 (22 characters)."""
    return prefix + "-" + base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")


def queue_name() -> str:
    return generated_name("amq.gen")


def consumer_tag() -> str:
    return generated_name("amq.ctag")


# Names this run of the node process, so that what belonged to an earlier run (its connections'
# exclusive queues, its non-durable queues) is told apart after a restart.
RUN_ID = base64.urlsafe_b64encode(os.urandom(6)).decode("ascii")
