"""Joining a cluster through seed nodes (`--join HOST:PORT`), from the joining node's side.

A brand-new node asks a seed to add it; a seed that is not the leader points to the leader,
which records the node in the members table and makes it a Raft voter. A node that restarts
with its data also calls its seeds, so that they learn where it listens now; a node that was
removed is told so and stays out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from cluster.address_book import AddressBook
from cluster.errors import ClusterUnavailable, NotLeaderHere
from cluster.remote import Membership, Remote

log = logging.getLogger(__name__)

JOIN_CALL_TIMEOUT = 15.0
# Redirects followed from one seed before trying the next.
_MAX_HOPS = 3
_MAX_BACKOFF_SECONDS = 5.0
_COMPLAIN_EVERY = 5


class RemovedFromCluster(Exception):
    """The cluster says this node is not (or no longer) one of its members."""


async def join_through_seeds(
    remote: Remote,
    book: AddressBook,
    seeds: Sequence[str],
    fresh: bool,
) -> Membership:
    """Keep asking the seeds until one (or the leader it names) takes this node in.

    Raises RemovedFromCluster when the cluster refuses this node for good.
    """
    backoff = 0.2
    attempt = 0
    while True:
        attempt += 1
        last_problem = "no seed answered"
        for seed in seeds:
            try:
                membership = await _join_via(remote, book, seed, fresh)
            except ClusterUnavailable as error:
                if error.kind == "removed":
                    raise RemovedFromCluster(error.reason) from None
                last_problem = f"{seed}: {error.reason}"
                continue
            if membership is None:
                last_problem = f"{seed}: no leader is known there yet"
                continue
            for name, address in membership.members.items():
                book.set(name, address)
            verb = "joined" if fresh else "rejoined"
            log.info(
                "%s the cluster through %s; members: %s",
                verb,
                seed,
                ", ".join(sorted(membership.members)),
            )
            return membership
        if attempt % _COMPLAIN_EVERY == 1:
            log.warning("cannot join the cluster yet (%s); trying again", last_problem)
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)


async def _join_via(remote: Remote, book: AddressBook, seed: str, fresh: bool) -> Membership | None:
    target = seed
    for _ in range(_MAX_HOPS):
        try:
            return await remote.join(
                target, book.own_name, book.own_address, fresh, JOIN_CALL_TIMEOUT
            )
        except NotLeaderHere as redirect:
            if redirect.leader is None or redirect.leader_address is None:
                return None
            book.set(redirect.leader, redirect.leader_address)
            target = redirect.leader_address
    return None
