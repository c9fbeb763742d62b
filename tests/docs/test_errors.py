"""docs/errors.md: each entry's code raises, with the message the page shows.

One test per entry.
"""

from pathlib import Path

import pytest
from page_runner import ISOLATED, blocks, check_page, sections

PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
TEXT = PAGE.read_text(encoding="utf-8")
ENTRIES = [title for title, _ in sections(TEXT) if title]


def test_the_page_runs_each_entry_on_its_own():
    assert ISOLATED in TEXT
    assert len(ENTRIES) >= 12


@pytest.mark.parametrize("entry", ENTRIES)
def test_entry_raises_the_error_it_shows(entry, tmp_path):
    indices = dict(sections(TEXT))[entry]
    shown = [blocks(TEXT)[i].expected for i in indices]
    # Every entry shows an error line (the runner appends `ErrorType: message` when a block
    # raises; a block that does not raise prints nothing, so the comparison would fail).
    assert any(s and ("Error: " in s) for s in shown), f"{entry}: the page shows no error"
    check_page(str(PAGE), str(tmp_path), section=entry)
