"""The committed gRPC/protobuf stubs are what the .proto contracts generate."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from proto import generate


def test_committed_stubs_match_the_contracts() -> None:
    assert generate.stale_stubs() == []


def test_the_check_notices_a_stale_stub(tmp_path: Path) -> None:
    copy = tmp_path / "proto"
    shutil.copytree(generate.PROTO_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    stub = copy / "raft_pb2.pyi"
    stub.write_text(stub.read_text() + "\n# edited by hand\n")
    assert generate.stale_stubs(copy) == ["raft_pb2.pyi differs from what its .proto generates"]


def test_the_check_notices_a_missing_stub(tmp_path: Path) -> None:
    copy = tmp_path / "proto"
    shutil.copytree(generate.PROTO_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "gossip_pb2.py").unlink()
    assert generate.stale_stubs(copy) == ["missing gossip_pb2.py"]


def test_stubs_from_another_generator_version_are_checked_by_descriptor(tmp_path: Path) -> None:
    copy = tmp_path / "proto"
    shutil.copytree(generate.PROTO_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for stub in copy.glob("*_pb2.py"):
        text = stub.read_text()
        stub.write_text(
            re.sub(r"(?m)^# Protobuf Python Version: .*$", "# Protobuf Python Version: 0.0.1", text)
        )
    assert generate.stale_stubs(copy) == []
