"""Every ```python block of every guide (docs/guides/, docs/ko/) runs and prints
what the page shows.

The convention is in page_runner.py; regenerate a page's outputs with
`python tests/docs/page_runner.py PAGE.md`.
"""

import io
import tokenize
from pathlib import Path

import pytest
from page_runner import blocks, check_page, mismatch

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted((DOCS / "guides").glob("*.md")) + sorted((DOCS / "ko").glob("*.md"))


def test_every_seed_tutorial_has_a_guide_in_both_languages():
    english = {p.name for p in PAGES if p.parent.name == "guides"}
    korean = {p.name for p in PAGES if p.parent.name == "ko"}
    assert english == korean
    for name in ["training_loop_from_scratch.md", "tape_and_function.md", "jax_basics.md",
                 "basic_training_loop.md", "customizing_fit.md", "getting_started.md"]:
        assert name in english


def _without_comments(code):
    """The block's tokens less its comments (what runs): a translated comment
    changes nothing that runs. Code that does not tokenize is kept whole."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return [(t.type, t.string) for t in tokens
                if t.type not in (tokenize.COMMENT, tokenize.NL)]
    except (tokenize.TokenError, SyntaxError):
        return code


def _same_code(page, translation):
    def code(p):
        return [_without_comments(b.code) for b in blocks(p.read_text(encoding="utf-8"))]
    return code(page) == code(translation)


# A Korean page whose code blocks are the English page's but for comments is checked
# against the English page's run (its shown outputs must match what that run printed);
# one whose code differs runs on its own.
TRANSLATED = {p: DOCS / "ko" / p.name for p in PAGES if p.parent.name == "guides"
              and (DOCS / "ko" / p.name).is_file() and _same_code(p, DOCS / "ko" / p.name)}
TO_RUN = [p for p in PAGES if p not in TRANSLATED.values()]


@pytest.mark.parametrize("page", TO_RUN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_guide_runs_and_prints_what_it_shows(page, tmp_path):
    translations = [str(TRANSLATED[page])] if page in TRANSLATED else []
    check_page(str(page), str(tmp_path), translations=translations)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_images_the_page_shows_are_committed(page):
    text = page.read_text(encoding="utf-8")
    for name in set(__import__("re").findall(r"\]\((images/[^)]+\.png)\)", text)):
        assert (page.parent / name).is_file(), f"{page}: {name} is missing; regenerate the page"


# ---- the runner itself --------------------------------------------------------------

def test_output_comparison_tolerates_timings_and_small_number_changes():
    shown = "8/8 ━━ 5s 785us/step - loss: 4.8556\n[0.3764, 12]"
    assert mismatch(shown, "8/8 ━━ 0s 2ms/step - loss: 4.8601\n[0.3765, 12]\n") is None
    assert "printed 5.1" in mismatch(shown, "8/8 ━━ 1s 1s/step - loss: 5.1\n[0.3764, 12]")
    assert "line 2" in mismatch(shown, "8/8 ━━ 1s 1s/step - loss: 4.8556\n[0.3764, 13, 1]")
    assert "lines printed" in mismatch(shown, "8/8 ━━ 1s 1s/step - loss: 4.8556")


def test_blocks_pair_code_with_the_output_right_after_it():
    page = "```python\nprint(1)\n```\n\n```text\n1\n```\ntext\n```py\nnot run\n```\n" \
           "```python\nx = 2\n```\nprose\n```text\nnot this block's\n```\n"
    found = blocks(page)
    assert [b.code for b in found] == ["print(1)\n", "x = 2\n"]
    assert found[0].expected == "1\n" and found[1].expected is None


def test_a_block_that_prints_unshown_output_or_raises_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint('surprise')\n```\n")
    with pytest.raises(AssertionError, match="does not show"):
        check_page(str(page), str(tmp_path))
    page.write_text("```python\nraise ValueError('bad')\n```\n\n```text\nValueError: good\n```\n")
    with pytest.raises(AssertionError, match="ValueError: bad"):
        check_page(str(page), str(tmp_path))


def test_a_translation_is_checked_against_the_pages_run(tmp_path):
    page, translation = tmp_path / "page.md", tmp_path / "ko.md"
    page.write_text("```python\nprint(6 * 7)\n```\n\n```text\n42\n```\n")
    translation.write_text("설명\n\n```python\nprint(6 * 7)\n```\n\n```text\n42\n```\n")
    check_page(str(page), str(tmp_path), translations=[str(translation)])
    translation.write_text("```python\nprint(6 * 7)\n```\n\n```text\n43\n```\n")
    with pytest.raises(AssertionError, match="ko.md:1"):
        check_page(str(page), str(tmp_path), translations=[str(translation)])


def test_translated_comments_are_the_same_code_and_other_changes_are_not(tmp_path):
    page, translation = tmp_path / "page.md", tmp_path / "ko.md"
    page.write_text("```python\nx = 6  # six\n# then print\nprint(x * 7)\n```\n")
    translation.write_text("```python\nx = 6  # 여섯\n# 그리고 출력\nprint(x * 7)\n```\n")
    assert _same_code(page, translation)
    translation.write_text("```python\nx = 6  # six\n# then print\nprint(x * 8)\n```\n")
    assert not _same_code(page, translation)
    translation.write_text("```python\nx = '# six'\nprint(x * 7)\n```\n")
    assert not _same_code(page, translation)
