"""The shared cluster secret: where it is kept, and how calls between nodes prove they know it.

Like Erlang's cookie, every node of a cluster holds the same secret. It never crosses the wire:
each call carries the caller's name and address, a timestamp, a fresh nonce and an HMAC-SHA256
of them (and of the method called) under the secret. The receiver recomputes the HMAC and
compares in constant time, refuses stale timestamps, and remembers recent nonces so a recorded
call cannot be replayed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

SECRET_FILE_NAME = ".cluster_secret"
USER_SECRET_DIR = ".leveret"
USER_SECRET_NAME = "cluster_secret"
NODE_KEY = "x-leveret-node"
ADDRESS_KEY = "x-leveret-address"
AUTH_KEY = "x-leveret-auth"
_VERSION = "v1"
# How far a caller's clock may be from ours; also how long nonces are remembered.
MAX_CLOCK_SKEW_SECONDS = 60.0
_MAX_REMEMBERED_NONCES = 200_000


class SecretError(Exception):
    """The cluster secret cannot be read or created."""


def user_secret_path() -> Path:
    """The secret the nodes of one user share on one machine, as Erlang's ~/.erlang.cookie."""
    return Path.home() / USER_SECRET_DIR / USER_SECRET_NAME


def load_or_create_secret(
    data_dir: Path, secret_file: str | None = None, user_file: Path | None = None
) -> bytes:
    """The cluster secret: from `secret_file` when given; else from DATA_DIR/.cluster_secret,
    which data directories made before the user-wide secret have; else the user's secret file
    (`user_secret_path()` by default), created on first use."""
    if secret_file:
        return _read_secret(Path(secret_file))
    kept = data_dir / SECRET_FILE_NAME
    if kept.exists():
        return _read_secret(kept)
    path = user_file or user_secret_path()
    if not path.exists():
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Created readable by the user only, in one step, so no other user sees it.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another node created it first: use theirs
        except OSError as error:
            raise SecretError(
                f"cannot create the cluster secret file {path}: {error.strerror or error}"
            ) from None
        else:
            with os.fdopen(fd, "wb") as file:
                file.write(secrets.token_urlsafe(32).encode() + b"\n")
                file.flush()
                os.fsync(file.fileno())
    return _read_secret(path)


def _read_secret(path: Path) -> bytes:
    try:
        secret = path.read_bytes().strip()
    except OSError as error:
        raise SecretError(
            f"cannot read the cluster secret file {path}: {error.strerror or error}"
        ) from None
    if not secret:
        raise SecretError(f"the cluster secret file {path} is empty")
    return secret


@dataclass(frozen=True, slots=True)
class Caller:
    """Who an authenticated call came from, as it says."""

    node: str
    address: str


class CallSigner:
    """Makes the metadata that authenticates this node's calls."""

    def __init__(self, secret: bytes, node: str, address: str) -> None:
        self._secret = secret
        self.node = node
        self.address = address

    def metadata(self, method: str) -> tuple[tuple[str, str], ...]:
        """The metadata for one call of `method` (the full path, `/package.Service/Method`)."""
        stamp = f"{time.time():.3f}"
        nonce = secrets.token_hex(12)
        mac = _mac(self._secret, method, self.node, self.address, stamp, nonce)
        return (
            (NODE_KEY, self.node),
            (ADDRESS_KEY, self.address),
            (AUTH_KEY, f"{_VERSION}:{stamp}:{nonce}:{mac}"),
        )


class CallVerifier:
    """Checks the metadata of incoming calls against the secret."""

    def __init__(self, secret: bytes, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._clock = clock
        self._nonces: set[str] = set()
        self._nonce_order: deque[tuple[float, str]] = deque()

    def verify(self, method: str, metadata: Iterable[tuple[str, str | bytes]]) -> Caller | str:
        """The caller, or why the call is refused."""
        values = {key: value for key, value in metadata if isinstance(value, str)}
        node, address, auth = values.get(NODE_KEY), values.get(ADDRESS_KEY), values.get(AUTH_KEY)
        if node is None or address is None or auth is None:
            return "no cluster credentials"
        parts = auth.split(":")
        if len(parts) != 4 or parts[0] != _VERSION:
            return "malformed cluster credentials"
        _, stamp, nonce, mac = parts
        expected = _mac(self._secret, method, node, address, stamp, nonce)
        if not hmac.compare_digest(expected.encode(), mac.encode()):
            return "wrong cluster secret"
        try:
            sent_at = float(stamp)
        except ValueError:
            return "malformed cluster credentials"
        now = self._clock()
        if abs(now - sent_at) > MAX_CLOCK_SKEW_SECONDS:
            return f"credentials dated {now - sent_at:+.0f}s from this node's clock"
        if not self._remember(nonce, now):
            return "replayed credentials"
        return Caller(node, address)

    def _remember(self, nonce: str, now: float) -> bool:
        order = self._nonce_order
        while order and (
            order[0][0] < now - 2 * MAX_CLOCK_SKEW_SECONDS or len(order) > _MAX_REMEMBERED_NONCES
        ):
            self._nonces.discard(order.popleft()[1])
        if nonce in self._nonces:
            return False
        self._nonces.add(nonce)
        order.append((now, nonce))
        return True


def _mac(secret: bytes, method: str, node: str, address: str, stamp: str, nonce: str) -> str:
    message = f"leveret-cluster\n{_VERSION}\n{method}\n{node}\n{address}\n{stamp}\n{nonce}"
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()
