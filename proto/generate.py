"""Regenerate the Python stubs of proto/*.proto, or check that the committed ones are current.

Run `python -m proto.generate` after changing a .proto file, and `python -m proto.generate
--check` to verify (tests do). With the grpcio-tools version that produced the committed stubs
the check compares the generated files byte for byte; with another version, whose output differs
in its headers, it compares the compiled descriptors, which is what the contracts are.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

PROTO_DIR = Path(__file__).resolve().parent
REPO = PROTO_DIR.parent
_GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
_VERSION_LINE = re.compile(r"^# Protobuf Python Version: (\S+)$", re.MULTILINE)


def proto_files() -> list[Path]:
    """The contracts, in name order."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generated_names() -> list[str]:
    """The file names the stubs of every contract are written to."""
    return [path.stem + suffix for path in proto_files() for suffix in _GENERATED_SUFFIXES]


def generate(out_root: Path) -> None:
    """Compile every contract into `out_root`/proto/ (the repository root regenerates in place)."""
    from grpc_tools import protoc  # a build tool: only needed when generating

    include = Path(protoc.__file__).resolve().parent / "_proto"
    (out_root / "proto").mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{REPO}",
        f"-I{include}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *(str(path.relative_to(REPO)) for path in proto_files()),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed; see its messages above")


def descriptor_set() -> dict[str, bytes]:
    """Each contract's compiled FileDescriptorProto, serialized, keyed by its proto path."""
    from grpc_tools import protoc

    include = Path(protoc.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        args = [
            "grpc_tools.protoc",
            f"-I{REPO}",
            f"-I{include}",
            f"--descriptor_set_out={out}",
            *(str(path.relative_to(REPO)) for path in proto_files()),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed; see its messages above")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    for file in files.file:
        _drop_json_names(file.message_type)  # the Python stubs embed descriptors without them
    return {file.name: file.SerializeToString(deterministic=True) for file in files.file}


def _drop_json_names(messages: Any) -> None:
    for message in messages:
        for field in message.field:
            field.ClearField("json_name")
        _drop_json_names(message.nested_type)


def stale_stubs(committed: Path = PROTO_DIR) -> list[str]:
    """What is out of date in the stubs in `committed`; empty when they match the contracts."""
    problems = [name for name in generated_names() if not (committed / name).exists()]
    if problems:
        return [f"missing {name}" for name in problems]
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        fresh_dir = Path(tmp) / "proto"
        fresh_version = _generator_version(fresh_dir)
        if fresh_version == _generator_version(committed):
            return [
                f"{name} differs from what its .proto generates"
                for name in generated_names()
                if (fresh_dir / name).read_bytes() != (committed / name).read_bytes()
            ]
    return _stale_descriptors()


def _stale_descriptors() -> list[str]:
    expected = descriptor_set()
    problems = []
    for path in proto_files():
        name = f"proto/{path.name}"
        module = importlib.import_module(f"proto.{path.stem}_pb2")
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        if committed.SerializeToString(deterministic=True) != expected[name]:
            problems.append(f"proto/{path.stem}_pb2.py does not match {name}")
    return problems


def _generator_version(directory: Path) -> str | None:
    versions = {
        match.group(1)
        for path in directory.glob("*_pb2.py")
        for match in [_VERSION_LINE.search(path.read_text())]
        if match
    }
    return versions.pop() if len(versions) == 1 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proto.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_stubs()
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("regenerate with: python -m proto.generate", file=sys.stderr)
        return 1 if problems else 0
    generate(REPO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
