"""bench/cluster_bench.py rewrites only its own section of bench/RESULTS.md, part by part."""

from __future__ import annotations

from pathlib import Path

from bench.cluster_bench import START_MARK, write_parts


def test_the_section_is_appended_once_then_replaced(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Others' results\n\n| a | b |\n")
    write_parts({"metadata": "first metadata"}, results)
    write_parts({"metadata": "second metadata", "declares": "declares"}, results)
    write_parts({"metadata": "third metadata"}, results)
    text = results.read_text()
    assert text.startswith("# Others' results\n\n| a | b |\n")
    assert "third metadata" in text and "second" not in text and "first" not in text
    assert "declares" in text  # a part not measured this time stays
    assert text.count(START_MARK) == 1
