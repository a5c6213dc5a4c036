"""The cluster secret: its file, and calls signed with it."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from cluster.secret import (
    MAX_CLOCK_SKEW_SECONDS,
    SECRET_FILE_NAME,
    Caller,
    CallSigner,
    CallVerifier,
    SecretError,
    load_or_create_secret,
)

METHOD = "/leveret.cluster.Cluster/Submit"


def test_the_users_secret_file_is_created_once_readable_by_its_owner_only(
    tmp_path: Path,
) -> None:
    user_file = tmp_path / "home" / ".leveret" / "cluster_secret"
    first = load_or_create_secret(tmp_path / "a", user_file=user_file)
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(user_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(user_file.parent).st_mode) == 0o700
    # A second node of the same user on the same machine shares it, whatever its data dir.
    assert load_or_create_secret(tmp_path / "b", user_file=user_file) == first


def test_a_data_dirs_own_secret_is_kept(tmp_path: Path) -> None:
    (tmp_path / SECRET_FILE_NAME).write_text("from an older node\n")
    user_file = tmp_path / "home" / "cluster_secret"
    assert load_or_create_secret(tmp_path, user_file=user_file) == b"from an older node"
    assert not user_file.exists()


def test_a_given_secret_file_wins_and_must_not_be_empty(tmp_path: Path) -> None:
    given = tmp_path / "given"
    given.write_text("  shared secret \n")
    user_file = tmp_path / "home" / "cluster_secret"
    assert load_or_create_secret(tmp_path, str(given), user_file) == b"shared secret"
    assert not user_file.exists()
    given.write_text("\n")
    with pytest.raises(SecretError, match="empty"):
        load_or_create_secret(tmp_path, str(given))
    with pytest.raises(SecretError, match="cannot read"):
        load_or_create_secret(tmp_path, str(tmp_path / "missing"))


def test_a_signed_call_is_accepted_once() -> None:
    metadata = CallSigner(b"k", "n1", "127.0.0.1:1").metadata(METHOD)
    verifier = CallVerifier(b"k")
    assert verifier.verify(METHOD, metadata) == Caller("n1", "127.0.0.1:1")
    assert verifier.verify(METHOD, metadata) == "replayed credentials"


def test_calls_with_another_secret_method_or_claim_are_refused() -> None:
    signer = CallSigner(b"k", "n1", "127.0.0.1:1")
    assert CallVerifier(b"other").verify(METHOD, signer.metadata(METHOD)) == "wrong cluster secret"
    moved = signer.metadata("/leveret.cluster.Cluster/Join")
    assert CallVerifier(b"k").verify(METHOD, moved) == "wrong cluster secret"
    forged = [
        (key, "n2" if key == "x-leveret-node" else value) for key, value in signer.metadata(METHOD)
    ]
    assert CallVerifier(b"k").verify(METHOD, forged) == "wrong cluster secret"
    assert CallVerifier(b"k").verify(METHOD, []) == "no cluster credentials"


def test_old_credentials_are_refused() -> None:
    metadata = CallSigner(b"k", "n1", "a:1").metadata(METHOD)
    later = CallVerifier(b"k", clock=lambda: time.time() + MAX_CLOCK_SKEW_SECONDS + 5)
    verdict = later.verify(METHOD, metadata)
    assert isinstance(verdict, str) and "clock" in verdict
