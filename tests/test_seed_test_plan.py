"""tests/SEED_TEST_PLAN.md maps each line of seed 000's Test Plan to the tests
named after it; this keeps the table honest."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TABLE = TESTS / "SEED_TEST_PLAN.md"
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|(.*)\|\s*$")


def table_rows() -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            cells = [c.strip().strip("`") for c in match.group(3).split(",")]
            rows[int(match.group(1))] = [c for c in cells if c]
    return rows


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            names.add(node.name)
    return names


def test_every_line_of_the_seed_test_plan_is_listed() -> None:
    assert sorted(table_rows()) == list(range(1, 22))


def test_every_line_names_an_existing_test_called_after_it() -> None:
    missing: list[str] = []
    for number, refs in sorted(table_rows().items()):
        if not refs:
            missing.append(f"line {number}: no test")
        for ref in refs:
            file_name, _, function = ref.partition("::")
            path = TESTS.parent / file_name
            if not path.is_file() or function not in defined_tests(path):
                missing.append(f"line {number}: {ref} does not exist")
            elif not function.startswith("test_seed000_"):
                missing.append(f"line {number}: {function} is not named after the line")
    assert missing == []
