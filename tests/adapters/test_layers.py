"""The house is layered: a module imports only from its own layer and the
layers below it, never from one above. The order is one table (``LAYERS``),
read by the test over every import statement of ``kernel/`` and
``adapters/`` (those inside functions and ``TYPE_CHECKING`` blocks too)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from planfold import adapters, kernel

#: The layers, lowest first: each names the modules and packages in it (a
#: module belongs to the longest prefix that names it). Helpers every layer
#: shares sit just above the kernel; the stores share their layer with the
#: other ports they are built beside (the model clients, the fork record).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("kernel", ("planfold.kernel",)),
    (
        "shared helpers",
        (
            "planfold.adapters._lazy",
            "planfold.adapters.delegation",
            "planfold.adapters.errors",
            "planfold.adapters.loggers",
            "planfold.adapters.options",
            "planfold.adapters.redact",
            "planfold.adapters.views",
            "planfold.adapters.visible",
        ),
    ),
    ("codec", ("planfold.adapters.codec", "planfold.adapters.structuring")),
    ("store", ("planfold.adapters.store", "planfold.adapters.provenance", "planfold.adapters.llm")),
    ("runtime", ("planfold.adapters.runtime",)),
    (
        "serve, report, specgen, otel",
        ("planfold.adapters.serve", "planfold.adapters.report", "planfold.adapters.specgen", "planfold.adapters.otel"),
    ),
    ("cli", ("planfold.adapters.cli",)),
)

#: Packages that only name their modules (``planfold`` re-exports the
#: embedding surface on first use, ``planfold.adapters`` lists its packages);
#: they belong to no layer, and what imports ``planfold`` takes its version.
FACADES = frozenset({"planfold", "planfold.adapters"})

KERNEL = Path(kernel.__file__).resolve().parent
ADAPTERS = Path(adapters.__file__).resolve().parent


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the layer ``module`` belongs to."""
    found = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    if not found:
        raise LookupError(f"{module} is in no layer: add it to LAYERS")
    return max(found)[1]


def module_files() -> Iterator[tuple[str, Path]]:
    for package, root in (("planfold.kernel", KERNEL), ("planfold.adapters", ADAPTERS)):
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join([package, *parts]), path


def imports_of(module: str, path: Path, known: frozenset[str]) -> Iterator[tuple[int, str]]:
    """Every planfold module ``path`` (the module ``module``) imports: the
    line and the module's name (a name taken from a package is the package's
    module when it is one, else the package)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "planfold")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "planfold":
                continue
            for alias in node.names:
                name = f"{target}.{alias.name}"
                yield node.lineno, name if name in known else target


def upward_imports() -> list[str]:
    files = list(module_files())
    known = frozenset(name for name, _ in files) | FACADES
    found = []
    for module, path in files:
        if module in FACADES:
            continue
        own = layer_of(module)
        for line, target in imports_of(module, path, known):
            if target in FACADES:
                continue
            if layer_of(target) > own:
                found.append(f"{module}:{line} ({LAYERS[own][0]}) imports {target} ({LAYERS[layer_of(target)][0]})")
    return found


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert upward_imports() == []


def test_every_module_of_the_house_is_in_a_layer() -> None:
    modules = [name for name, _ in module_files() if name not in FACADES]
    assert len(modules) > 100
    for name in modules:
        layer_of(name)


def test_the_codec_imports_nothing_from_the_stores_and_a_generator_nothing_from_the_command_line() -> None:
    files = list(module_files())
    known = frozenset(name for name, _ in files) | FACADES
    imported = {
        module: {target for _, target in imports_of(module, path, known)}
        for module, path in files
    }
    codec = [m for m in imported if m.startswith("planfold.adapters.codec")]
    specgen = [m for m in imported if m.startswith("planfold.adapters.specgen")]
    assert codec and specgen
    assert [(m, t) for m in codec for t in imported[m] if t.startswith("planfold.adapters.store")] == []
    assert [(m, t) for m in specgen for t in imported[m] if t.startswith("planfold.adapters.cli")] == []
    assert "planfold.adapters.codec" in imported["planfold.adapters.store.projection"] | imported[
        "planfold.adapters.store.engine"
    ]


def test_the_check_finds_an_upward_import_and_resolves_relative_ones(tmp_path: Path) -> None:
    source = tmp_path / "codec_probe.py"
    source.write_text(
        "from ..store.base import Store\nfrom ...kernel.log import Event\nfrom .. import errors\n"
        "import planfold.adapters.cli.main\nimport json\n",
        encoding="utf-8",
    )
    known = frozenset({"planfold.adapters.errors", "planfold.adapters.store.base", "planfold.adapters.cli.main"})
    found = list(imports_of("planfold.adapters.codec.probe", source, known))
    assert found == [
        (1, "planfold.adapters.store.base"),
        (2, "planfold.kernel.log"),
        (3, "planfold.adapters.errors"),
        (4, "planfold.adapters.cli.main"),
    ]
    own = layer_of("planfold.adapters.codec.probe")
    assert [t for _, t in found if layer_of(t) > own] == ["planfold.adapters.store.base", "planfold.adapters.cli.main"]
    assert layer_of("planfold.adapters.cli.serve") > layer_of("planfold.adapters.serve.server")
    with pytest.raises(LookupError, match=r"planfold\.adapters\.nowhere is in no layer"):
        layer_of("planfold.adapters.nowhere")
