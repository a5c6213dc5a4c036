"""bench/cluster_bench.py rewrites only its own section of bench/RESULTS.md."""

from __future__ import annotations

from pathlib import Path

from bench.cluster_bench import END_MARK, START_MARK, write_section


def test_the_section_is_appended_once_then_replaced(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# Others' results\n\n| a | b |\n")
    write_section(f"{START_MARK}\nfirst\n{END_MARK}", results)
    write_section(f"{START_MARK}\nsecond\n{END_MARK}", results)
    text = results.read_text()
    assert text.startswith("# Others' results\n\n| a | b |\n")
    assert "second" in text and "first" not in text
    assert text.count(START_MARK) == 1
