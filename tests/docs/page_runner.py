"""Runs the code blocks of a Markdown page and checks (or rewrites) the output it shows.

The convention, for every page under docs/guides/, docs/ko/ and docs/errors.md:

* Every ```python block runs, in page order, in one namespace per page (a page reads
  top to bottom like a script). A block meant only to be read is tagged ```py instead.
* A ```text block right after a ```python block (nothing but blank lines between) is
  what that block prints: its stdout, then, if the block raises, one last line
  `ErrorType: message`. A ```python block with no ```text block after it must print
  nothing and must not raise.
* A page containing the comment `<!-- page_runner: each section alone -->` runs each
  `## ` section in a fresh session after the blocks above the first heading (its setup);
  docs/errors.md does, so each entry is a test of its own.
* Output is compared line by line after normalising what cannot repeat: progress-bar
  timings (`1s 17ms/step`) become `<time>`, object addresses `0x...` become `0x?`.
  The text between numbers must match exactly; numbers match within
  `rtol=REL_TOL`, `atol=ABS_TOL` (other CPUs and XLA versions round differently).
* Blocks run in a temporary working folder that has an `images/` folder; when the
  outputs are regenerated, what `plt.savefig("images/x.png")` wrote is copied into the
  `images/` folder beside the page (and committed); other files the page writes are not.

Regenerate a page's outputs after changing it (they are produced by running, never typed):

    python tests/docs/page_runner.py docs/guides/getting_started.md [more pages]
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
from dataclasses import dataclass

ISOLATED = "<!-- page_runner: each section alone -->"
REL_TOL = 2e-2
ABS_TOL = 2e-3

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_TIMING = re.compile(r"\b\d+(?:\.\d+)?(?:s|ms|us|µs) \d+(?:\.\d+)?(?:s|ms|us|µs)/step\b")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


@dataclass
class Block:
    """A ```python block, where it sits, and the ```text block that follows it (if any)."""

    code: str
    line: int                     # 1-based line of the opening fence
    expected: str | None          # the ```text block's content, or None
    expected_span: tuple | None   # (start, end) character span of that block's content


def blocks(page_text):
    """The page's ```python blocks in order, each with the output block that follows it."""
    fences = list(_FENCE.finditer(page_text))
    found = []
    for i, fence in enumerate(fences):
        if fence.group(1).strip() != "python":
            continue
        expected = span = None
        if i + 1 < len(fences):
            following = fences[i + 1]
            between = page_text[fence.end():following.start()]
            if following.group(1).strip() == "text" and not between.strip():
                expected, span = following.group(2), following.span(2)
        line = page_text.count("\n", 0, fence.start()) + 1
        found.append(Block(fence.group(2), line, expected, span))
    return found


def normalise(text):
    lines = [_ADDRESS.sub("0x?", _TIMING.sub("<time>", line)).rstrip()
             for line in text.strip("\n").splitlines()]
    return "\n".join(lines).strip("\n")


def mismatch(expected, actual):
    """None if `actual` output matches `expected` (numbers within tolerance), else why not."""
    want, got = normalise(expected), normalise(actual)
    want_lines, got_lines = want.splitlines(), got.splitlines()
    if len(want_lines) != len(got_lines):
        return f"{len(got_lines)} lines printed, the page shows {len(want_lines)}"
    for number, (w, g) in enumerate(zip(want_lines, got_lines), 1):
        if _NUMBER.split(w) != _NUMBER.split(g):
            return f"line {number}: printed {g!r}, the page shows {w!r}"
        for a, b in zip(_NUMBER.findall(w), _NUMBER.findall(g)):
            if not math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL):
                return f"line {number}: printed {b} where the page shows {a}: {g!r}"
    return None


def run_block(code, namespace, filename):
    """Runs `code`; returns what it printed, plus `ErrorType: message` if it raised."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, filename, "exec"), namespace)
    except Exception as error:  # the page shows it
        message = f"{type(error).__name__}: {error}".strip()   # notes left out: they vary
        return out.getvalue() + ("\n" if out.getvalue() and not out.getvalue().endswith("\n")
                                 else "") + message, error
    return out.getvalue(), None


def fresh_session():
    """Same starting point for every page: auto-names from 0, global seed 0."""
    import loopax
    from loopax.src import naming
    naming.clear_session()
    loopax.random.set_random_seed(0)


@contextlib.contextmanager
def working_folder(path):
    os.makedirs(os.path.join(path, "images"), exist_ok=True)
    previous = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def sections(page_text):
    """[(heading, [block indices])]: the blocks under each `## ` heading.

    The heading is "" for the blocks before any.
    """
    headings = [(m.start(), m.group(1).strip())
                for m in re.finditer(r"^## (.+)$", page_text, re.MULTILINE)]
    grouped = {}
    for index, block in enumerate(blocks(page_text)):
        offset = len("\n".join(page_text.splitlines()[:block.line - 1]))
        title = ""
        for start, heading in headings:
            if start <= offset:
                title = heading
        grouped.setdefault(title, []).append(index)
    return list(grouped.items())


def _batches(text, section):
    """The groups of block indices that each start from a fresh session and namespace.

    A page holding ISOLATED runs every `## ` section on its own after the blocks above the
    first heading (its setup), so an entry's output (auto-names: 'dense_3') does not depend
    on the entries before it; `section` then picks one. Other pages run as one batch.
    """
    if ISOLATED not in text:
        return [None]
    groups = sections(text)
    setup = next((indices for title, indices in groups if title == ""), [])
    found = [(title, setup + indices) for title, indices in groups if title]
    if section is not None:
        found = [(title, indices) for title, indices in found if title == section]
        assert found, f"no section {section!r}"
    return [indices for _, indices in found]


def run_page(path, workdir, section=None):
    """Runs the page's blocks; yields (block, output, error), each block once."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    page_blocks = blocks(text)
    seen = set()
    with working_folder(workdir):
        for selected in _batches(text, section):
            fresh_session()
            namespace = {"__name__": "__main__"}
            for index, block in enumerate(page_blocks):
                if selected is not None and index not in selected:
                    continue
                output, error = run_block(block.code, namespace, f"{path}:{block.line}")
                if index not in seen:
                    seen.add(index)
                    yield block, output, error
    with contextlib.suppress(ImportError):
        import matplotlib.pyplot as plt
        plt.close("all")


def check_page(path, workdir, section=None, translations=()):
    """Raises AssertionError naming the first block whose output differs from the page.

    `translations` are pages with the same code blocks (checked by the caller) whose
    shown outputs are checked against the same run.
    """
    shown = [(p, blocks(open(p, encoding="utf-8").read())) for p in translations]
    for i, (block, output, error) in enumerate(run_page(path, workdir, section)):
        _check_block(f"{path}:{block.line}", block.expected, output, error)
        for other, other_blocks in shown:
            _check_block(f"{other}:{other_blocks[i].line}", other_blocks[i].expected, output,
                         error)


def _check_block(where, expected, output, error):
    if expected is None:
        if error is not None:
            raise AssertionError(f"{where}: the block raised\n{output}") from error
        if output.strip():
            raise AssertionError(f"{where}: the block printed output the page does not show "
                                 f"(add a ```text block after it):\n{output}")
        return
    problem = mismatch(expected, output)
    if problem:
        raise AssertionError(f"{where}: {problem}\n--- printed:\n{output}")


def update_page(path):
    """Rewrites the page's ```text blocks with what its blocks print now; copies its images."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as workdir:
        results = list(run_page(path, workdir))
        images = os.path.join(os.path.dirname(os.path.abspath(path)), "images")
        for name in sorted(os.listdir(os.path.join(workdir, "images"))):
            os.makedirs(images, exist_ok=True)
            shutil.copy(os.path.join(workdir, "images", name), os.path.join(images, name))
    for block, output, error in reversed(results):
        if block.expected_span is None:
            if error is not None or output.strip():
                print(f"{path}:{block.line}: prints or raises but has no ```text block after it:\n"
                      f"{output}", file=sys.stderr)
            continue
        start, end = block.expected_span
        text = text[:start] + output.strip("\n") + "\n" + text[end:]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    for page in sys.argv[1:]:
        update_page(page)
        print("updated", page)
