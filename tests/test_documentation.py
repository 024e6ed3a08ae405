"""What the documentation names exists: every dotted module or attribute a
module docstring of the package names (``planfold.adapters.store.base``,
``kernel.turn.record_reply``, ``adapters.runtime.machine``), and every
``planfold.`` name in ``specs/README.md`` and the pages of ``docs/``,
resolves to a module of this checkout or an attribute of one. Every code
block of the README and of ``docs/`` is of a kind a test runs
(``tests.docs_blocks.LANGUAGES``), every relative link leads to a file, and
the README stays short and links every page."""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

from tests.docs_blocks import DOCS, LANGUAGES, PAGES, Block, blocks, runs_apart

ROOT = Path(__file__).resolve().parent.parent
#: A dotted name of the package: with its ``planfold.`` prefix, or from the
#: top of one of its two folders.
NAME = re.compile(r"\b(planfold(?:\.\w+)+|(?:kernel|adapters)\.\w+(?:\.\w+)*)")


def resolves(name: str) -> bool:
    """Whether ``name`` (``planfold.`` prefixed or not) is a module of the
    package, or an attribute path below one."""
    parts = (name if name.startswith("planfold.") else f"planfold.{name}").split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def _docstring_names() -> list[tuple[str, str]]:
    named: list[tuple[str, str]] = []
    for folder in ("kernel", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            named += [(str(path.relative_to(ROOT)), name.rstrip(".")) for name in NAME.findall(doc)]
    return named


def test_the_resolver_tells_a_real_name_from_a_made_up_one() -> None:
    assert resolves("planfold.kernel.turn.record_reply") and resolves("adapters.runtime.machine.StepMachine")
    assert not resolves("kernel.plan_status") and not resolves("planfold.adapters.runtime.machine.NoSuchThing")


def test_module_docstrings_name_many_modules() -> None:
    assert len(_docstring_names()) > 50


@pytest.mark.parametrize(("where", "name"), _docstring_names())
def test_every_dotted_name_in_a_module_docstring_resolves(where: str, name: str) -> None:
    assert resolves(name), f"{where} names {name}, which does not exist"


def test_every_planfold_name_in_the_specs_readme_resolves() -> None:
    text = (ROOT / "specs" / "README.md").read_text(encoding="utf-8")
    names = [name.rstrip(".") for name in NAME.findall(text)]
    assert names
    assert [name for name in names if not resolves(name)] == []


def _telemetry_names() -> set[str]:
    """The span, event and attribute names the tracing adapter writes (they
    share planfold's namespace but name no module)."""
    source = (ROOT / "adapters" / "otel.py").read_text(encoding="utf-8")
    return set(re.findall(r"[\"'](planfold(?:\.\w+)+)[\"']", source))


def _telemetry_prefixes() -> tuple[str, ...]:
    """The prefixes of the names the tracing adapter builds from a payload's fields."""
    source = (ROOT / "adapters" / "otel.py").read_text(encoding="utf-8")
    return tuple(f"{prefix}." for prefix in re.findall(r"f[\"'](planfold(?:\.\w+)+)\.\{", source))


def test_every_planfold_name_in_the_docs_pages_resolves() -> None:
    names = [
        (page.name, name.rstrip("."))
        for page in sorted(DOCS.glob("*.md"))
        for name in re.findall(r"\bplanfold(?:\.\w+)+", page.read_text(encoding="utf-8"))
    ]
    assert names
    telemetry, built = _telemetry_names(), _telemetry_prefixes()
    assert telemetry and built
    left = [(page, name) for page, name in names if not resolves(name) and name not in telemetry]
    assert [(page, name) for page, name in left if not name.startswith(built)] == []


ALL_BLOCKS = blocks()


def _allowed(block: Block) -> bool:
    """Whether a test runs ``block`` where it stands."""
    page = block.page.relative_to(ROOT).as_posix()
    if runs_apart(block):  # tests/test_docs_embedding.py runs them, in order, in one namespace
        return block.language in {"python", "sh", "toml"}
    text = block.page.read_text(encoding="utf-8").splitlines()
    before = "\n".join(text[: block.line])
    return {
        "python": True,
        "sh": True,
        "console": True,
        "shell": page == "README.md" and block.heading == "Installing",
        "jsonrpc": page == "docs/serve.md",
        "mermaid": before.count("<!-- diagrams:start -->") + before.count("<!-- runtime:start -->")
        > before.count("<!-- diagrams:end -->") + before.count("<!-- runtime:end -->"),
        "tree": True,
    }.get(block.language, False)


def test_the_documentation_has_blocks_of_every_kind_a_test_runs() -> None:
    assert {block.language for block in ALL_BLOCKS} | {"text"} == set(LANGUAGES)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.where for block in ALL_BLOCKS])
def test_every_code_block_is_of_a_kind_a_test_runs_where_it_stands(block: Block) -> None:
    assert block.language in LANGUAGES and block.language != "text", (
        f"{block.where}: a {block.language} block that no test runs (a text block must follow a python one)"
    )
    assert _allowed(block), f"{block.where}: a {block.language} block where no test runs it"


def test_the_block_reader_pairs_a_program_with_its_output_and_refuses_an_unclosed_block(tmp_path: Path) -> None:
    from tests.docs_blocks import page_blocks  # noqa: PLC0415

    page = tmp_path / "page.md"
    page.write_text("# T\n\n```python\nprint(1)\n```\n\n```text\n1\n```\n\n```text\nalone\n```\n", encoding="utf-8")
    found = page_blocks(page)
    assert [(b.language, b.body, b.shown, b.heading) for b in found] == [
        ("python", "print(1)\n", "1\n", "T"),
        ("text", "alone\n", None, "T"),
    ]
    page.write_text("```sh\nls\n", encoding="utf-8")
    with pytest.raises(ValueError, match="never closed"):
        page_blocks(page)
    page.write_text("```\nls\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="without a language"):
        page_blocks(page)


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.language == "tree"], ids=lambda b: b.where)
def test_every_path_a_layout_tree_names_exists(block: Block) -> None:
    parents: list[str] = []
    for line in block.body.splitlines():
        name = line.split()[0]
        depth = (len(line) - len(line.lstrip())) // 2
        parents[depth:] = [name]
        path = ROOT.joinpath(*parents)
        assert path.exists(), f"{block.where}: {'/'.join(parents)} does not exist"


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_of_a_page_leads_to_a_file(page: Path) -> None:
    targets = [target for target in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in target]
    assert [target for target in targets if not (page.parent / target).exists()] == []


def test_the_readme_is_short_and_links_every_page_of_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    pages = {"embedding", "plan-mode-and-goals", "storage", "serve", "report-and-fork", "security", "testing"}
    assert {f"docs/{name}.md" for name in pages} <= set(LINK.findall(text))
    assert {f"docs/{page.name}" for page in DOCS.glob("*.md")} <= set(LINK.findall(text))
    assert "[LICENSE](LICENSE)" in text


def test_the_readme_names_exactly_the_runtimes_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=!~\[;\s]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]]
    assert len(names) >= 2
    assert f"the runtime ({', '.join(names)})" in (ROOT / "README.md").read_text(encoding="utf-8")
