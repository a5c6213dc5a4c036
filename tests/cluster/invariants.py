"""Raft's safety properties, checked incrementally after every step of a simulated cluster."""

from __future__ import annotations

from dataclasses import dataclass, field

from cluster.raft import Entry, EntryKind, RaftNode, Ready, Role


class SafetyViolation(AssertionError):
    """A Raft safety property does not hold."""


@dataclass
class RaftInvariants:
    """Global knowledge accumulated across the whole run, so each check only looks at changes.

    Election safety: at most one leader per term, ever. Log matching: an entry is identified by
    (index, term), so every log holding it holds the same command and the same preceding term
    (checked for every entry as it enters any log, which by induction covers whole prefixes).
    Leader completeness: a leader of term T holds every entry committed in a term <= T (the
    term in which an entry was committed is at most the term of the first node seen to commit
    it; that can be later than the entry's own term).
    State machine safety: every node that applies index i has applied the same sequence of
    commands up to i (compared by a running digest).
    """

    leaders: dict[int, str] = field(default_factory=dict)
    entries: dict[tuple[int, int], tuple[EntryKind, bytes, int | None]] = field(
        default_factory=dict
    )
    committed_terms: dict[int, int] = field(default_factory=dict)
    # Per index, the lowest term of a node seen committing it: a bound on when it was committed.
    commit_terms: dict[int, int] = field(default_factory=dict)
    # The highest index committed by each term (per the bound above), for leader completeness.
    highest_committed_by_term: dict[int, int] = field(default_factory=dict)
    digests: dict[int, bytes] = field(default_factory=dict)
    checks: int = 0

    def after_step(self, node: RaftNode, ready: Ready, leaders: list[RaftNode]) -> None:
        """Check everything `ready` (just returned by `node`) can have changed."""
        self.checks += 1
        if node.role is Role.LEADER:
            holder = self.leaders.setdefault(node.term, node.id)
            if holder != node.id:
                raise SafetyViolation(f"two leaders in term {node.term}: {holder} and {node.id}")
        if node.commit_index > node.last_index:
            raise SafetyViolation(f"{node.id} commit {node.commit_index} past its log end")
        for entry in ready.entries:
            self._check_log_matching(node, entry)
        if ready.snapshot is not None:
            known = self.committed_terms.get(ready.snapshot.index)
            if known is not None and known != ready.snapshot.term:
                raise SafetyViolation(
                    f"{node.id} snapshot at {ready.snapshot.index} has term {ready.snapshot.term},"
                    f" committed term is {known}"
                )
        newly_committed = False
        for entry in ready.committed:
            self._check_log_matching(node, entry)
            known = self.committed_terms.setdefault(entry.index, entry.term)
            if known != entry.term:
                raise SafetyViolation(
                    f"{node.id} committed ({entry.index}, {entry.term}), "
                    f"but ({entry.index}, {known}) was committed before"
                )
            if node.term < self.commit_terms.get(entry.index, node.term + 1):
                self.commit_terms[entry.index] = node.term
                if entry.index > self.highest_committed_by_term.get(node.term, 0):
                    self.highest_committed_by_term[node.term] = entry.index
                newly_committed = True
        if node.role is Role.LEADER and node not in leaders:
            leaders = [*leaders, node]
        if newly_committed or node.role is Role.LEADER:
            for leader in leaders:
                self.check_leader_completeness(leader)

    def check_leader_completeness(self, leader: RaftNode) -> None:
        """`leader` holds the newest entry committed by a term no later than its own."""
        eligible = [
            index for term, index in self.highest_committed_by_term.items() if term <= leader.term
        ]
        if not eligible:
            return
        index = max(eligible)
        expected = self.committed_terms[index]
        if index < leader.first_index - 1:
            return  # compacted into the leader's snapshot, which holds only committed entries
        if leader.term_at(index) != expected:
            raise SafetyViolation(
                f"leader {leader.id} of term {leader.term} lacks committed entry "
                f"({index}, {expected}); it has term {leader.term_at(index)} there"
            )

    def on_applied(self, node_id: str, index: int, digest: bytes) -> None:
        """Record that `node_id` reached state `digest` after applying `index`."""
        known = self.digests.setdefault(index, digest)
        if known != digest:
            raise SafetyViolation(f"{node_id} applied a different command sequence up to {index}")

    def on_restored(self, node_id: str, index: int, digest: bytes) -> None:
        """Record that `node_id` restored a snapshot of the state after `index`."""
        known = self.digests.get(index)
        if known is not None and known != digest:
            raise SafetyViolation(f"{node_id} restored a snapshot that differs at {index}")

    def check_logs_match(self, nodes: list[RaftNode]) -> None:
        """The full log matching property over the current logs (for the end of a run)."""
        for node in nodes:
            if node.last_index >= node.first_index:
                for entry in node.entries(node.first_index, node.last_index):
                    self._check_log_matching(node, entry)

    def _check_log_matching(self, node: RaftNode, entry: Entry) -> None:
        fingerprint = (entry.kind, entry.data, node.term_at(entry.index - 1))
        known = self.entries.setdefault((entry.index, entry.term), fingerprint)
        if known != fingerprint:
            raise SafetyViolation(
                f"{node.id} holds ({entry.index}, {entry.term}) with different content or "
                f"predecessor: {fingerprint!r} vs {known!r}"
            )
