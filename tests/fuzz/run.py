"""Coverage-guided fuzzing with Atheris (libFuzzer): `python -m tests.fuzz.run TARGET [options]`.

TARGET is `parser` (the sans-IO connection parser, cross-checked against pamqp) or `node` (whole
connections on an in-process node). The seed corpus is written from the recorded client
transcripts; what libFuzzer finds goes to --corpus, a crashing input to --artifacts. The exit
status is 0 when every input ran clean; libFuzzer's last lines give the count of inputs run.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris


def _load(name: str) -> tuple[Callable[[bytes], object], Callable[[Path], int]]:
    """The target `name` and the seed writer, imported with Leveret's code instrumented for
    coverage (the fuzzer steers by what it reaches there): in the process that fuzzes only, as
    instrumenting takes seconds."""
    with atheris.instrument_imports(include=["leveret"]):
        from tests.fuzz.node_target import NodeTarget
        from tests.fuzz.parser_target import run_parser
        from tests.fuzz.seeds import write_seeds
    return (run_parser if name == "parser" else NodeTarget().run), write_seeds


# Set in the process that fuzzes: the directory its temporary files go to.
_SCRATCH = "LEVERET_FUZZ_SCRATCH"


def main(argv: list[str]) -> None:
    if _SCRATCH not in os.environ:
        sys.exit(_in_scratch(argv))
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run")
    parser.add_argument("target", choices=("parser", "node"))
    parser.add_argument("--runs", type=int, default=10000, help="inputs to run (-1: no limit)")
    parser.add_argument("--seconds", type=int, default=0, help="stop after this long (0: no)")
    parser.add_argument("--corpus", type=Path, help="where new inputs are kept")
    parser.add_argument("--artifacts", type=Path, default=Path("."), help="crashing inputs")
    parser.add_argument("--max-len", type=int, default=4096)
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0, help="libFuzzer's seed (0: random)")
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # refused logins and closed connections, by the million
    target, write_seeds = _load(args.target)
    seeds = Path(tempfile.mkdtemp(prefix="leveret-fuzz-seeds-"))
    write_seeds(seeds)
    corpus = args.corpus or Path(tempfile.mkdtemp(prefix="leveret-fuzz-corpus-"))
    corpus.mkdir(parents=True, exist_ok=True)
    args.artifacts.mkdir(parents=True, exist_ok=True)
    libfuzzer = [
        sys.argv[0],
        f"-runs={args.runs}",
        f"-max_len={args.max_len}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        "-timeout=30",
        f"-seed={args.seed}",
        f"-artifact_prefix={args.artifacts}/",
        "-print_final_stats=1",
        str(corpus),
        str(seeds),
    ]
    if args.seconds:
        libfuzzer.insert(1, f"-max_total_time={args.seconds}")
    atheris.Setup(libfuzzer, target)
    atheris.Fuzz()


def _in_scratch(argv: list[str]) -> int:
    """Fuzz in a child process whose temporary files (seeds, the node's data) go to a directory
    removed once it ends: libFuzzer ends its process with exit(), past Python's cleanup."""
    with tempfile.TemporaryDirectory(prefix="leveret-fuzz-") as scratch:
        env = {**os.environ, "TMPDIR": scratch, _SCRATCH: scratch}
        return subprocess.call([sys.executable, "-m", "tests.fuzz.run", *argv], env=env)


if __name__ == "__main__":
    main(sys.argv[1:])
