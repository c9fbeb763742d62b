"""The API reference pages cover exactly the public names of tests/api_names.txt."""

from reference_pages import REFERENCE, pages


def test_reference_pages_are_up_to_date():
    expected = pages()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in REFERENCE.glob("*.md")}
    assert sorted(on_disk) == sorted(expected), "run: python tests/docs/reference_pages.py"
    for name, text in expected.items():
        assert on_disk[name] == text, (
            f"docs/reference/{name} is stale: python tests/docs/reference_pages.py"
        )


def test_every_public_class_and_loopax_function_has_an_entry():
    text = "\n".join(pages().values())
    for name in ["loopax.Model", "loopax.GradientTape", "loopax.layers.Dense",
                 "loopax.callbacks.EarlyStopping", "loopax.optimizers.Adam"]:
        assert f"::: {name}\n" in text
