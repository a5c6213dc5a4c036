"""What a queue keeps in memory about one of its segments: bitmaps of which sequence numbers are
stored, acknowledged and delivered, and the counts that decide when the segment can go."""

from __future__ import annotations


class SegmentIndex:
    """Bit i of each bitmap is about seq first_seq + i; memory is three bits per seq in the
    segment's range, whatever the size of the messages (gaps in seqs cost their bits too)."""

    __slots__ = (
        "_acked",
        "_delivered",
        "_present",
        "accounted_bytes",
        "first_seq",
        "last_seq",
        "live",
        "records",
        "segment_id",
        "shared_refs",
    )

    def __init__(self, segment_id: int) -> None:
        self.segment_id = segment_id
        self.first_seq: int | None = None
        self.last_seq: int | None = None
        self.records = 0
        self.live = 0
        self.accounted_bytes = 0
        # shared-store file id -> how many records of this segment point into it
        self.shared_refs: dict[int, int] = {}
        self._present = bytearray()
        self._acked = bytearray()
        self._delivered = bytearray()

    def covers(self, seq: int) -> bool:
        return self.first_seq is not None and self.first_seq <= seq <= self.last_seq  # type: ignore[operator]

    def add(self, seq: int, *, acked: bool = False, delivered: bool = False) -> None:
        """Records that seq is stored here; seqs must increase."""
        if self.first_seq is None:
            self.first_seq = seq
        elif seq <= self.last_seq:  # type: ignore[operator]
            raise ValueError(f"seq {seq} is not above {self.last_seq}")
        self.last_seq = seq
        index = seq - self.first_seq
        byte, bit = index >> 3, 1 << (index & 7)
        if byte >= len(self._present):
            grow = max(byte + 1 - len(self._present), len(self._present) // 2, 64)
            padding = bytes(grow)
            self._present += padding
            self._acked += padding
            self._delivered += padding
        self._present[byte] |= bit
        self.records += 1
        if acked:
            self._acked[byte] |= bit
        else:
            self.live += 1
        if delivered:
            self._delivered[byte] |= bit

    def is_live(self, seq: int) -> bool:
        if not self.covers(seq):
            return False
        index = seq - self.first_seq  # type: ignore[operator]
        byte, bit = index >> 3, 1 << (index & 7)
        return bool(self._present[byte] & bit) and not self._acked[byte] & bit

    def is_delivered(self, seq: int) -> bool:
        if not self.covers(seq):
            return False
        index = seq - self.first_seq  # type: ignore[operator]
        return bool(self._delivered[index >> 3] & (1 << (index & 7)))

    def set_delivered(self, seq: int) -> bool:
        """Marks a live message delivered; False if it is not live or was already marked."""
        if not self.is_live(seq):
            return False
        index = seq - self.first_seq  # type: ignore[operator]
        byte, bit = index >> 3, 1 << (index & 7)
        if self._delivered[byte] & bit:
            return False
        self._delivered[byte] |= bit
        return True

    def set_acked(self, seq: int) -> bool:
        """Acknowledges a live message; False if it is not stored here or already acked."""
        if not self.is_live(seq):
            return False
        index = seq - self.first_seq  # type: ignore[operator]
        self._acked[index >> 3] |= 1 << (index & 7)
        self.live -= 1
        return True

    def add_shared_ref(self, file_id: int) -> None:
        self.shared_refs[file_id] = self.shared_refs.get(file_id, 0) + 1

    def memory_bytes(self) -> int:
        return len(self._present) * 3
