"""One Raft participant as a pure state machine: messages and ticks in, a Ready batch out."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from cluster.raft.config import RaftConfig
from cluster.raft.errors import NotLeader, ProposalRejected
from cluster.raft.log import RaftLog
from cluster.raft.membership import ConfChange, ConfOp, encode_conf_change, quorum_size
from cluster.raft.messages import (
    AppendEntries,
    AppendEntriesResponse,
    Heartbeat,
    HeartbeatResponse,
    InstallSnapshot,
    Message,
    RequestVote,
    RequestVoteResponse,
    TimeoutNow,
)
from cluster.raft.progress import Progress, ProgressState
from cluster.raft.read_index import ReadIndexTracker
from cluster.raft.ready import ReadState, Ready
from cluster.raft.types import Entry, EntryKind, HardState, Snapshot, StorageState


class Role(Enum):
    """The part a node plays in its current term."""

    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre_candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


@dataclass(frozen=True, slots=True)
class RaftStatus:
    """A read-only picture of a node, for status commands and metrics."""

    id: str
    role: Role
    term: int
    leader: str | None
    commit_index: int
    applied_index: int
    last_index: int
    voters: tuple[str, ...]
    # The group is quiet (RaftConfig.quiesce): no heartbeats, no election clock.
    quiet: bool = False


_FROM_LEADER = (AppendEntries, Heartbeat, InstallSnapshot)
# What a leader may send before its own log write is durable: nothing in them vouches for that
# write (a leader's term and vote were made durable before its election).
_EARLY = (AppendEntries, Heartbeat, InstallSnapshot, TimeoutNow)
# What `idle_ticks` answers for a quiet node: nothing is due until a message, a proposal or
# `peer_lost` wakes it.
_QUIET_IDLE_TICKS = 600


class RaftNode:
    """A Raft node with no IO: every public call returns the Ready batch it caused.

    Build it from what storage recovered (`StorageState()` for a new node). A node of a brand-new
    cluster gets every initial member's id in `peers`; a node joining an existing cluster, or
    restarting, gets no peers and learns the membership from its log. A restarting caller restores
    its state machine from `stored.snapshot` first; `ready()` then hands over the committed
    entries after it. `rng` drives the randomized election timeouts (seed it for determinism).
    """

    def __init__(
        self,
        id: str,
        peers: Sequence[str],
        stored: StorageState,
        config: RaftConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.id = id
        self._config = config or RaftConfig()
        self._rng = rng or random.Random()
        self._log = RaftLog(stored.snapshot, stored.entries)
        self._term = stored.hard_state.term
        self._vote = stored.hard_state.vote
        self._commit = min(
            max(stored.hard_state.commit, self._log.first_index - 1), self._log.last_index
        )
        self._applied = self._log.first_index - 1
        self._saved_hard_state = stored.hard_state
        self._messages: list[Message] = []
        self._read_states: list[ReadState] = []
        self._role = Role.FOLLOWER
        self._leader: str | None = None
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._ticks = 0
        self._election_timeout = self._config.election_tick
        self._votes: dict[str, bool] = {}
        self._progress: dict[str, Progress] = {}
        self._transferee: str | None = None
        self._transfer_elapsed = 0
        self._pending_conf_index = 0
        # As leader with parallel_leader_persist: the last entry of its term known durable here.
        self._durable_own = 0
        self._reads = ReadIndexTracker()
        self._reads_awaiting_commit: list[tuple[bytes, str | None]] = []
        # RaftConfig.quiesce: whether the group is quiet, and as leader the followers that
        # answered a quiescing heartbeat at the current commit index.
        self._quiet = False
        self._quiet_acks: set[str] = set()
        if self._is_blank(stored) and peers:
            self._bootstrap(peers)
        self._voters = self._log.voters_at(self._log.last_index)
        self._become_follower(self._term, None)

    # -- what callers read ---------------------------------------------------------------

    @property
    def role(self) -> Role:
        """This node's role in its current term."""
        return self._role

    @property
    def term(self) -> int:
        """This node's current term."""
        return self._term

    @property
    def leader_id(self) -> str | None:
        """The leader this node follows (itself when leader), if it knows one."""
        return self._leader

    @property
    def quiet(self) -> bool:
        """Whether the group is quiet as far as this node knows (RaftConfig.quiesce)."""
        return self._quiet

    @property
    def commit_index(self) -> int:
        """The highest log index known to be committed."""
        return self._commit

    @property
    def voters(self) -> tuple[str, ...]:
        """The voter set in effect on this node (the newest in its log)."""
        return self._voters

    @property
    def first_index(self) -> int:
        """The first index still held as an entry."""
        return self._log.first_index

    @property
    def last_index(self) -> int:
        """The index of the last entry in this node's log."""
        return self._log.last_index

    @property
    def snapshot(self) -> Snapshot | None:
        """The latest snapshot this node holds."""
        return self._log.snapshot

    def term_at(self, index: int) -> int | None:
        """The term of this node's entry at `index` (None if compacted away or absent)."""
        return self._log.term_at(index)

    def entries(self, low: int, high: int) -> tuple[Entry, ...]:
        """This node's entries `low`..`high` inclusive (all must be held)."""
        return self._log.slice(low, high)

    def status(self) -> RaftStatus:
        """A snapshot of this node's Raft state."""
        return RaftStatus(
            id=self.id,
            role=self._role,
            term=self._term,
            leader=self._leader,
            commit_index=self._commit,
            applied_index=self._applied,
            last_index=self._log.last_index,
            voters=self._voters,
            quiet=self._quiet,
        )

    # -- what callers do -----------------------------------------------------------------

    def ready(self) -> Ready:
        """Hand over the work accumulated so far (persist, send, apply) and forget it."""
        unpersisted = self._log.take_unpersisted()
        hard_state = HardState(self._term, self._vote, self._commit)
        changed_hard_state = None if hard_state == self._saved_hard_state else hard_state
        same_vote = (hard_state.term, hard_state.vote) == (
            self._saved_hard_state.term,
            self._saved_hard_state.vote,
        )
        self._saved_hard_state = hard_state
        messages: tuple[Message, ...] = tuple(self._messages)
        early: tuple[Message, ...] = ()
        if self._config.parallel_leader_persist and same_vote:
            early = tuple(m for m in messages if isinstance(m, _EARLY))
            messages = tuple(m for m in messages if not isinstance(m, _EARLY))
        if unpersisted.snapshot is not None and unpersisted.snapshot.index > self._applied:
            # The caller restores its state machine from this snapshot before applying more.
            self._applied = unpersisted.snapshot.index
        committed = self._log.slice(self._applied + 1, self._commit)
        self._applied = self._commit
        ready = Ready(
            hard_state=changed_hard_state,
            entries=unpersisted.entries,
            truncate_from=unpersisted.truncate_from,
            snapshot=unpersisted.snapshot,
            messages=messages,
            committed=committed,
            read_states=tuple(self._read_states),
            early_messages=early,
        )
        self._messages.clear()
        self._read_states.clear()
        return ready

    def tick(self) -> Ready:
        """Advance this node's logical clock by one tick."""
        self._ticks += 1
        if self._quiet:
            pass  # nothing is due: no heartbeat to send, no election clock to run
        elif self._role is Role.LEADER:
            self._tick_leader()
        else:
            self._tick_election()
        return self.ready()

    def idle_ticks(self) -> int:
        """How many ticks may pass, with no message or proposal, before one that does
        something: a driver with nothing else to do may sleep that long, then tick that many
        times in a row. The earlier ones only count (a follower's election clock, a leader's
        heartbeat clock); the last one campaigns, sends heartbeats or finds the quorum lost."""
        cfg = self._config
        if self._quiet:
            return _QUIET_IDLE_TICKS
        if self._role is not Role.LEADER:
            if self.id not in self._voters:
                return cfg.election_tick  # never campaigns: it only counts
            return max(1, self._election_timeout - self._election_elapsed)
        if not self._progress:
            return cfg.election_tick  # alone: no heartbeats to send, no quorum to lose
        if self._transferee is not None or any(
            progress.state is ProgressState.SNAPSHOT for progress in self._progress.values()
        ):
            return 1  # those count every tick toward a retry
        due: float = cfg.heartbeat_tick - self._heartbeat_elapsed
        if cfg.check_quorum:
            # The tick on which _quorum_recently_active turns false.
            due = min(due, self._majority_heard_at() + cfg.election_tick - self._ticks)
        return int(max(1, due))

    def step(self, message: Message) -> Ready:
        """Take one message from a peer."""
        if message.dst == self.id:
            self._step(message)
        return self.ready()

    def peer_lost(self, peer: str) -> Ready:
        """The caller's failure detector suspects `peer` (it stopped answering, or its stream
        broke). Only a quiet group cares: a follower stops trusting a suspected leader and
        campaigns after its usual timeout; a leader heartbeats again, which tells it whether it
        still has a quorum."""
        if self._quiet:
            if self._role is Role.LEADER and peer in self._progress:
                self._wake()
                self._broadcast_heartbeat()
            elif self._role is not Role.LEADER and peer == self._leader:
                self._lose_quiet_leader()
        return self.ready()

    def campaign(self) -> Ready:
        """Start an election now, as if the election timeout had passed."""
        if self._role is not Role.LEADER:
            self._start_election(pre_vote=self._config.pre_vote)
        return self.ready()

    def propose(self, command: bytes) -> Ready:
        """Append `command` to the leader's log; its entry is the last of `Ready.entries`."""
        return self.propose_many([command])

    def propose_many(self, commands: Sequence[bytes]) -> Ready:
        """Append several commands at once (one round of appends); they end `Ready.entries`."""
        self._check_can_propose()
        if commands:
            self._append([(EntryKind.NORMAL, command) for command in commands])
        return self.ready()

    def propose_conf_change(self, op: ConfOp, node: str) -> Ready:
        """Add or remove one voter; it takes effect on each node once in that node's log."""
        self._check_can_propose()
        if self._pending_conf_index > self._commit:
            raise ProposalRejected("a membership change is still in progress")
        if not self._committed_in_current_term():
            raise ProposalRejected("the leader has not yet committed an entry of its term")
        voters = set(self._voters)
        if op is ConfOp.ADD:
            if node in voters:
                raise ProposalRejected(f"{node} is already a member")
            voters.add(node)
        elif op is ConfOp.REMOVE:
            if node not in voters:
                raise ProposalRejected(f"{node} is not a member")
            if len(voters) == 1:
                raise ProposalRejected("cannot remove the last member")
            voters.discard(node)
        else:
            raise ProposalRejected(f"unsupported membership change {op.value}")
        change = ConfChange(op, node, tuple(sorted(voters)))
        self._append([(EntryKind.CONF, encode_conf_change(change))])
        return self.ready()

    def transfer_leadership(self, target: str) -> Ready:
        """Hand leadership to `target` once it has caught up (proposals are refused meanwhile)."""
        if self._role is not Role.LEADER:
            raise NotLeader(self._leader)
        if target == self.id or target == self._transferee:
            return self.ready()
        if target not in self._progress:
            raise ProposalRejected(f"{target} is not a voter")
        self._wake()
        self._transferee = target
        self._transfer_elapsed = 0
        if self._progress[target].match == self._log.last_index:
            self._send(TimeoutNow(self.id, target, self._term))
        else:
            self._send_append(target)
        return self.ready()

    def read_index(self, context: bytes, confirmed_by: str | None = None) -> Ready:
        """Ask for a linearizable read; a `ReadState` with `context` answers in a later Ready.

        `confirmed_by` names the follower that asked for the read, when that follower will
        itself check, as the answer reaches it, that it is still in this leader's term (has
        voted in no later one): that counts as its confirmation, so in a cluster of three the
        read needs no heartbeat round. The reply must carry this leader's term for the check.
        """
        if self._role is not Role.LEADER:
            raise NotLeader(self._leader)
        if confirmed_by == self.id or confirmed_by not in self._voters:
            confirmed_by = None
        if self._committed_in_current_term():
            self._start_read(context, confirmed_by)
        else:
            # Until its no-op commits, a new leader does not know the full committed index.
            self._reads_awaiting_commit.append((context, confirmed_by))
        if not self._reads.idle or self._reads_awaiting_commit:
            self._wake()  # a heartbeat round confirms it; a read answered at once keeps quiet
        return self.ready()

    def persisted(self, index: int, term: int) -> Ready:
        """Tell the node that its log is durable up to `index`, whose entry has `term`.

        Only a leader with `parallel_leader_persist` needs this: it counts itself towards a
        commit only for its own entries reported here. Stale reports (another term, a log that
        changed since) are ignored.
        """
        if (
            self._role is Role.LEADER
            and term == self._term
            and index > self._durable_own
            and self._log.term_at(index) == term
        ):
            self._durable_own = index
            if self._maybe_commit():
                self._broadcast_append()
        return self.ready()

    def compact(self, index: int, data: bytes) -> Ready:
        """Replace the applied entries up to `index` by a snapshot whose state is `data`."""
        if not self._log.first_index <= index <= self._applied:
            raise ValueError(f"can only compact applied entries, not {index}")
        term = self._log.term_at(index)
        assert term is not None
        self._log.compact(Snapshot(index, term, self._log.voters_at(index), data))
        return self.ready()

    # -- message dispatch ----------------------------------------------------------------

    def _step(self, m: Message) -> None:
        if self._quiet and isinstance(m, RequestVote):
            if self._role is Role.LEADER:
                # A voter that stopped hearing from us: heartbeats tell it we still lead.
                self._wake()
                self._broadcast_heartbeat()
            elif m.src == self._leader:
                self._lose_quiet_leader()  # our leader campaigns: it no longer leads
        if m.term > self._term:
            if isinstance(m, RequestVote) and not m.transfer and self._in_leader_lease():
                # A leader was heard from recently: this candidate is probably cut off or stale.
                return
            if isinstance(m, RequestVote) and m.pre_vote:
                pass  # a pre-vote never changes the receiver's term
            elif isinstance(m, RequestVoteResponse) and m.pre_vote and m.granted:
                pass  # granted pre-votes carry the term the candidate is about to take
            else:
                self._become_follower(m.term, m.src if isinstance(m, _FROM_LEADER) else None)
        elif m.term < self._term:
            self._answer_stale(m)
            return

        if isinstance(m, RequestVote):
            self._on_request_vote(m)
        elif isinstance(m, RequestVoteResponse):
            self._on_vote_response(m)
        elif isinstance(m, _FROM_LEADER):
            self._on_leader_message(m)
        elif isinstance(m, AppendEntriesResponse):
            self._on_append_response(m)
        elif isinstance(m, HeartbeatResponse):
            self._on_heartbeat_response(m)
        elif (
            isinstance(m, TimeoutNow) and self._role is not Role.LEADER and self.id in self._voters
        ):
            self._start_election(pre_vote=False, transfer=True)

    def _answer_stale(self, m: Message) -> None:
        cfg = self._config
        if isinstance(m, (AppendEntries, Heartbeat)) and (cfg.check_quorum or cfg.pre_vote):
            # Tell a deposed leader about the newer term; otherwise, with pre-vote, it might
            # keep its followers from ever campaigning again.
            self._send(AppendEntriesResponse(self.id, m.src, self._term, False, 0))
        elif isinstance(m, RequestVote) and m.pre_vote:
            self._send(RequestVoteResponse(self.id, m.src, self._term, False, pre_vote=True))

    # -- elections -----------------------------------------------------------------------

    def _in_leader_lease(self) -> bool:
        return (
            self._config.check_quorum
            and self._leader is not None
            and self._election_elapsed < self._config.election_tick
        )

    def _tick_election(self) -> None:
        self._election_elapsed += 1
        if self.id in self._voters and self._election_elapsed >= self._election_timeout:
            self._start_election(pre_vote=self._config.pre_vote)

    def _start_election(self, pre_vote: bool, transfer: bool = False) -> None:
        if self.id not in self._voters:
            return
        if pre_vote:
            self._reset(self._term)
            self._role = Role.PRE_CANDIDATE
            vote_term = self._term + 1
        else:
            self._reset(self._term + 1)
            self._role = Role.CANDIDATE
            self._vote = self.id
            vote_term = self._term
        self._votes = {self.id: True}
        if self._tally() is not None:
            return
        for voter in self._voters:
            if voter != self.id:
                self._send(
                    RequestVote(
                        self.id,
                        voter,
                        vote_term,
                        self._log.last_index,
                        self._log.last_term,
                        pre_vote=pre_vote,
                        transfer=transfer,
                    )
                )

    def _on_request_vote(self, m: RequestVote) -> None:
        can_vote = (
            self._vote == m.src
            or (self._vote is None and self._leader is None)
            or (m.pre_vote and m.term > self._term)
        )
        if can_vote and self._log.is_up_to_date(m.last_index, m.last_term):
            self._send(RequestVoteResponse(self.id, m.src, m.term, True, pre_vote=m.pre_vote))
            if not m.pre_vote:
                self._vote = m.src
                self._election_elapsed = 0
        else:
            self._send(RequestVoteResponse(self.id, m.src, self._term, False, pre_vote=m.pre_vote))

    def _on_vote_response(self, m: RequestVoteResponse) -> None:
        expected = Role.PRE_CANDIDATE if m.pre_vote else Role.CANDIDATE
        if self._role is not expected or m.src not in self._voters:
            return
        self._votes[m.src] = m.granted
        self._tally()

    def _tally(self) -> bool | None:
        """Act on the votes so far: True if the election was won, False if lost, else None."""
        quorum = quorum_size(len(self._voters))
        granted = sum(1 for voter, yes in self._votes.items() if yes and voter in self._voters)
        refused = sum(1 for voter, yes in self._votes.items() if not yes and voter in self._voters)
        if granted >= quorum:
            if self._role is Role.PRE_CANDIDATE:
                self._start_election(pre_vote=False)
            else:
                self._become_leader()
            return True
        if refused > len(self._voters) - quorum:
            self._become_follower(self._term, None)
            return False
        return None

    # -- role changes --------------------------------------------------------------------

    def _reset(self, term: int) -> None:
        if term != self._term:
            self._term = term
            self._vote = None
        self._leader = None
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._election_timeout = self._rng.randrange(
            self._config.election_tick, 2 * self._config.election_tick
        )
        self._votes = {}
        self._progress = {}
        self._transferee = None
        self._quiet = False
        self._quiet_acks.clear()
        waiting = [context for context, _ in self._reads_awaiting_commit]
        for context in self._reads.drop_all() + waiting:
            self._read_states.append(ReadState(context, None))
        self._reads_awaiting_commit = []

    def _become_follower(self, term: int, leader: str | None) -> None:
        self._reset(term)
        self._role = Role.FOLLOWER
        self._leader = leader

    def _become_leader(self) -> None:
        self._reset(self._term)
        self._role = Role.LEADER
        self._leader = self.id
        self._sync_progress()
        # Any membership change not yet known to be committed counts as still in progress.
        self._pending_conf_index = self._log.last_index
        self._durable_own = 0
        self._append([(EntryKind.NOOP, b"")])

    def _bootstrap(self, peers: Sequence[str]) -> None:
        voters = tuple(sorted(set(peers)))
        change = ConfChange(ConfOp.BOOTSTRAP, None, voters)
        # Every initial member writes this same entry, so their logs agree from the start.
        self._log.append([Entry(1, 1, EntryKind.CONF, encode_conf_change(change))])
        self._term = 1
        self._commit = 1

    @staticmethod
    def _is_blank(stored: StorageState) -> bool:
        return stored.snapshot is None and not stored.entries and stored.hard_state.term == 0

    # -- leader --------------------------------------------------------------------------

    def _check_can_propose(self) -> None:
        if self._role is not Role.LEADER:
            raise NotLeader(self._leader)
        if self._transferee is not None:
            raise ProposalRejected(f"leadership is being transferred to {self._transferee}")

    def _append(self, items: Sequence[tuple[EntryKind, bytes]]) -> None:
        self._wake()
        first = self._log.last_index + 1
        entries = [
            Entry(index, self._term, kind, data)
            for index, (kind, data) in enumerate(items, start=first)
        ]
        self._log.append(entries)
        for entry in entries:
            if entry.kind is EntryKind.CONF:
                self._pending_conf_index = entry.index
                self._on_log_membership_change()
        self._maybe_commit()
        self._broadcast_append()

    def _tick_leader(self) -> None:
        cfg = self._config
        self._heartbeat_elapsed += 1
        self._election_elapsed += 1
        if self._election_elapsed >= cfg.election_tick:
            self._election_elapsed = 0
        if cfg.check_quorum and not self._quorum_recently_active():
            self._become_follower(self._term, None)
            return
        if self._transferee is not None:
            self._transfer_elapsed += 1
            if self._transfer_elapsed >= cfg.election_tick:
                self._transferee = None  # the target did not take over in time: carry on
        for peer, progress in self._progress.items():
            if progress.state is ProgressState.SNAPSHOT:
                progress.snapshot_ticks += 1
                if progress.snapshot_ticks >= cfg.snapshot_retry_ticks:
                    progress.become_probe()
                    self._send_append(peer)
        if self._heartbeat_elapsed >= cfg.heartbeat_tick:
            self._heartbeat_elapsed = 0
            settled = self._settled()
            if not settled:
                self._quiet_acks.clear()
            self._broadcast_heartbeat(quiesce=settled)

    # -- quiescence (RaftConfig.quiesce) -------------------------------------------------

    def _settled(self) -> bool:
        """Whether every follower holds the leader's whole log, all of it committed, with no
        read, transfer or snapshot under way: the group may go quiet."""
        return (
            self._config.quiesce
            and bool(self._progress)
            and self._transferee is None
            and self._commit == self._log.last_index
            and self._committed_in_current_term()
            and self._reads.idle
            and not self._reads_awaiting_commit
            and all(
                progress.state is ProgressState.REPLICATE and progress.match == self._commit
                for progress in self._progress.values()
            )
        )

    def _wake(self) -> None:
        """As leader: end the quiet, or the gathering of answers towards it."""
        if self._quiet:
            # The followers had nothing to answer while quiet: count the quorum from now.
            for progress in self._progress.values():
                progress.heard_at = self._ticks
            self._heartbeat_elapsed = 0
        self._quiet = False
        self._quiet_acks.clear()

    def _lose_quiet_leader(self) -> None:
        """As a quiet follower: stop trusting the leader. Its lease is over at once, so this
        node votes for others, and it campaigns itself after its usual timeout."""
        self._quiet = False
        self._election_elapsed = self._config.election_tick

    def _quorum_recently_active(self) -> bool:
        """Whether a majority was heard from within the last election timeout."""
        return self._majority_heard_at() > self._ticks - self._config.election_tick

    def _majority_heard_at(self) -> float:
        """The latest tick by which a majority of the voters had each been heard from (this
        node counts as always heard): the majority's oldest last answer. -inf when too few
        voters are tracked, inf when this node alone is a majority."""
        needed = quorum_size(len(self._voters)) - (1 if self.id in self._voters else 0)
        if needed <= 0:
            return math.inf
        heard = sorted(
            (
                self._progress[voter].heard_at
                for voter in self._voters
                if voter != self.id and voter in self._progress
            ),
            reverse=True,
        )
        return heard[needed - 1] if len(heard) >= needed else -math.inf

    def _sync_progress(self) -> None:
        """Track exactly the current voters other than this node."""
        for voter in self._voters:
            if voter != self.id and voter not in self._progress:
                self._progress[voter] = Progress(self._log.last_index + 1, self._ticks)
        for peer in [peer for peer in self._progress if peer not in self._voters]:
            del self._progress[peer]
        if self._transferee is not None and self._transferee not in self._progress:
            self._transferee = None

    def _on_log_membership_change(self) -> None:
        self._voters = self._log.voters_at(self._log.last_index)
        if self._role is Role.LEADER:
            self._sync_progress()

    def _broadcast_append(self) -> None:
        for peer in sorted(self._progress):
            self._send_append(peer)

    def _broadcast_heartbeat(self, context: int | None = None, quiesce: bool = False) -> None:
        round_ = self._reads.round if context is None else context
        for peer in sorted(self._progress):
            commit = min(self._progress[peer].match, self._commit)
            self._send(Heartbeat(self.id, peer, self._term, commit, round_, quiesce))

    def _send_append(self, peer: str, send_if_empty: bool = True) -> None:
        progress = self._progress[peer]
        if progress.is_paused(self._config.max_inflight):
            return
        prev_index = progress.next - 1
        prev_term = self._log.term_at(prev_index)
        if prev_term is None:
            snapshot = self._log.snapshot
            assert snapshot is not None, "entries are only compacted into a snapshot"
            progress.become_snapshot(snapshot.index)
            self._send(InstallSnapshot(self.id, peer, self._term, snapshot))
            return
        last = min(self._log.last_index, progress.next + self._config.max_entries_per_message - 1)
        entries = self._log.slice(progress.next, last)
        if not entries and not send_if_empty:
            return
        self._send(
            AppendEntries(self.id, peer, self._term, prev_index, prev_term, entries, self._commit)
        )
        progress.on_sent(last, len(entries))

    def _on_append_response(self, m: AppendEntriesResponse) -> None:
        progress = self._progress.get(m.src) if self._role is Role.LEADER else None
        if progress is None:
            return
        progress.heard_at = self._ticks
        if not m.success:
            hint = m.hint_index
            if m.hint_term > 0:
                hint = self._log.find_conflict_by_term(m.hint_index, m.hint_term)
            if progress.on_rejected(m.index, hint):
                self._send_append(m.src)
            return
        was_paused = progress.is_paused(self._config.max_inflight)
        if progress.on_acked(m.index):
            if progress.state is ProgressState.PROBE or (
                progress.state is ProgressState.SNAPSHOT
                and progress.match >= progress.pending_snapshot
            ):
                progress.become_replicate()
            if self._maybe_commit():
                self._broadcast_append()
            elif was_paused or progress.next <= self._log.last_index:
                self._send_append(m.src, send_if_empty=False)
            if m.src == self._transferee and progress.match == self._log.last_index:
                self._send(TimeoutNow(self.id, m.src, self._term))

    def _on_heartbeat_response(self, m: HeartbeatResponse) -> None:
        progress = self._progress.get(m.src) if self._role is Role.LEADER else None
        if progress is None:
            return
        progress.heard_at = self._ticks
        progress.probe_sent = False
        if progress.state is ProgressState.REPLICATE and progress.is_paused(
            self._config.max_inflight
        ):
            progress.free_one_inflight()
        if progress.match < self._log.last_index:
            # Resend from `next`; a follower that lost appends refuses and we probe back.
            self._send_append(m.src)
        self._reads.ack(m.src, m.context)
        self._release_reads()
        if m.quiet_at and m.quiet_at == self._commit and self._settled():
            # An answer at an older commit index does not count: that follower may not know
            # the entries committed since.
            self._quiet_acks.add(m.src)
            self._quiet = self._quiet_acks.issuperset(self._progress)

    def _maybe_commit(self) -> bool:
        if self._role is not Role.LEADER or not self._voters:
            return False
        matches = sorted(
            (
                self._own_match() if voter == self.id else self._progress[voter].match
                for voter in self._voters
            ),
            reverse=True,
        )
        candidate = matches[quorum_size(len(self._voters)) - 1]
        # Only entries of the current term are committed by counting replicas (Raft §5.4.2).
        if candidate <= self._commit or self._log.term_at(candidate) != self._term:
            return False
        self._commit = candidate
        self._after_commit_advanced()
        return True

    def _own_match(self) -> int:
        if self._config.parallel_leader_persist:
            # Only what is durable here counts: the entries may still be on their way to disk.
            return self._durable_own
        return self._log.last_index

    def _after_commit_advanced(self) -> None:
        if self._reads_awaiting_commit and self._committed_in_current_term():
            waiting, self._reads_awaiting_commit = self._reads_awaiting_commit, []
            for context, confirmed_by in waiting:
                self._start_read(context, confirmed_by)
        if self.id not in self._voters and self._log.last_conf_index() <= self._commit:
            # This leader's own removal is committed: the remaining voters elect a new one.
            self._become_follower(self._term, None)

    def _committed_in_current_term(self) -> bool:
        return self._log.term_at(self._commit) == self._term

    def _start_read(self, context: bytes, confirmed_by: str | None = None) -> None:
        round_ = self._reads.add(context, self._commit, confirmed_by)
        self._release_reads()
        if self._progress and self._reads.pending(context):
            self._broadcast_heartbeat(round_)

    def _release_reads(self) -> None:
        quorum = quorum_size(len(self._voters))
        for context, index in self._reads.release(self._voters, self.id, quorum):
            self._read_states.append(ReadState(context, index))

    # -- follower ------------------------------------------------------------------------

    def _on_leader_message(self, m: AppendEntries | Heartbeat | InstallSnapshot) -> None:
        if self._role is Role.LEADER:
            return  # impossible in a correct cluster: one leader per term
        if self._role is not Role.FOLLOWER or self._leader != m.src:
            self._become_follower(self._term, m.src)
        self._election_elapsed = 0
        self._quiet = False
        if isinstance(m, AppendEntries):
            self._on_append(m)
        elif isinstance(m, Heartbeat):
            self._commit_to(min(m.commit, self._log.last_index))
            # Quiet only once this node has committed all the leader has.
            self._quiet = m.quiesce and self._commit == m.commit
            quiet_at = m.commit if self._quiet else 0
            self._send(HeartbeatResponse(self.id, m.src, self._term, m.context, quiet_at))
        else:
            self._on_snapshot(m)

    def _on_append(self, m: AppendEntries) -> None:
        entries = m.entries
        prev_index, prev_term = m.prev_index, m.prev_term
        if prev_index < self._commit:
            # Everything up to our commit index is committed, so it matches the leader's log.
            entries = tuple(entry for entry in entries if entry.index > self._commit)
            prev_index = self._commit
            prev_term = self._log.term_at(prev_index) or 0
        if self._log.term_at(prev_index) != prev_term:
            hint = self._log.find_conflict_by_term(
                min(m.prev_index, self._log.last_index), m.prev_term
            )
            self._send(
                AppendEntriesResponse(
                    self.id,
                    m.src,
                    self._term,
                    False,
                    m.prev_index,
                    hint_index=hint,
                    hint_term=self._log.term_at(hint) or 0,
                )
            )
            return
        last_conf = self._log.last_conf_index()
        self._log.accept(entries)
        if self._log.last_conf_index() != last_conf or any(
            entry.kind is EntryKind.CONF for entry in entries
        ):
            self._on_log_membership_change()
        last_new = max(prev_index + len(entries), m.prev_index + len(m.entries))
        self._commit_to(min(m.commit, last_new))
        self._send(AppendEntriesResponse(self.id, m.src, self._term, True, last_new))

    def _on_snapshot(self, m: InstallSnapshot) -> None:
        snapshot = m.snapshot
        if snapshot.index <= self._commit:
            self._send(AppendEntriesResponse(self.id, m.src, self._term, True, self._commit))
            return
        if self._log.term_at(snapshot.index) == snapshot.term:
            # Our log already holds the snapshot's last entry: just learn that it is committed.
            self._commit_to(snapshot.index)
        else:
            self._log.restore(snapshot)
            self._commit = snapshot.index
            self._on_log_membership_change()
        self._send(AppendEntriesResponse(self.id, m.src, self._term, True, snapshot.index))

    def _commit_to(self, index: int) -> None:
        self._commit = max(self._commit, index)

    def _send(self, message: Message) -> None:
        self._messages.append(message)
