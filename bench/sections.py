"""The sections that benchmark scripts keep in bench/RESULTS.md, each between its own markers."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def marks(name: str) -> tuple[str, str]:
    """The start and end markers of the section `name` (a script's file name)."""
    return f"<!-- {name}: start -->", f"<!-- {name}: end -->"


def section_inside(text: str, name: str) -> str | None:
    """What lies between the markers of `name` in `text`, or None when the section is absent."""
    start, end = marks(name)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0]


def replace_section(text: str, name: str, section: str) -> str:
    """`text` with the section `name` (`section` carries its markers) in place of the old one, or
    appended when there was none; everything else stays as it was."""
    start, end = marks(name)
    if start in text and end in text:
        before, rest = text.split(start, 1)
        return before + section + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"


def write_section(name: str, section: str, path: Path = RESULTS) -> None:
    text = path.read_text() if path.exists() else ""
    path.write_text(replace_section(text, name, section))
