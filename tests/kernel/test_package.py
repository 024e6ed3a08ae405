"""The kernel package itself (``kernel/__init__.py``): a short surface (the
log, the phase, the errors) with each machine a package of its own, all of
it imported on first use so that importing the kernel stays cheap."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from planfold import kernel
from planfold.kernel import errors, log, phase, plan

MACHINES = ("decisions", "goal", "graph", "plan", "plan_events", "session", "tools")


def test_the_core_names_are_the_log_the_phase_and_the_errors_and_each_resolves_to_its_module() -> None:
    core = [name for name in kernel.__all__ if name not in MACHINES]
    assert sorted(core) == sorted([*errors.__all__, *log.__all__, *phase.__all__])
    for name in core:
        owner = next(m for m in (errors, log, phase) if name in m.__all__)
        assert getattr(kernel, name) is getattr(owner, name), name


def test_importing_the_kernel_loads_nothing_a_core_name_loads_the_core_and_a_machine_its_own_modules() -> None:
    code = (
        "import sys\n"
        "def loaded(): return sorted(m for m in sys.modules if m.startswith('planfold.kernel.'))\n"
        "import planfold.kernel as k\n"
        "print(loaded())\n"
        "from planfold.kernel import Event\n"
        "print(loaded())\n"
        "from planfold.kernel import goal\n"
        "print('planfold.kernel.goal.ops' in sys.modules, 'planfold.kernel.tools.gate' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    nothing, core, machine = out.splitlines()
    assert nothing == "[]"
    assert core == repr([f"planfold.kernel.{m}" for m in ("errors", "log", "payload", "phase")])
    assert machine == "True False"


def test_a_name_the_kernel_does_not_have_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"'planfold\.kernel' has no attribute 'no_such_name'"):
        kernel.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from planfold.kernel import no_such_name", {})


def test_the_kernel_lists_every_public_name_for_dir_and_help() -> None:
    listed = dir(kernel)
    assert set(kernel.__all__) <= set(listed)
    assert listed == sorted(listed)


def test_a_star_import_brings_the_core_and_every_machine() -> None:
    namespace: dict[str, object] = {}
    exec("from planfold.kernel import *", namespace)
    for name in kernel.__all__:
        assert name in namespace, name
    for machine in MACHINES:
        module = namespace[machine]
        assert isinstance(module, ModuleType) and module.__name__ == f"planfold.kernel.{machine}"
        assert all(hasattr(module, name) for name in module.__all__)


def test_every_kernel_module_can_be_imported_first() -> None:
    """No import cycle: each module imports cleanly in a fresh interpreter,
    whatever a program happens to import first."""
    names = [info.name for info in pkgutil.walk_packages(kernel.__path__, "planfold.kernel.")]
    assert "planfold.kernel.plan.capsule" in names and "planfold.kernel.session" in names
    code = (
        "import subprocess, sys\n"
        "failed = [n for n in sys.argv[1:] if subprocess.run([sys.executable, '-c', 'import ' + n]).returncode]\n"
        "print(failed)"
    )
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_plan_package_exports_a_short_surface_each_name_its_modules_own() -> None:
    assert len(plan.__all__) <= 80
    assert len(set(plan.__all__)) == len(plan.__all__)
    modules = [getattr(plan, name) for name in dir(plan) if isinstance(getattr(plan, name), ModuleType)]
    for name in plan.__all__:
        owners = [m for m in modules if name in getattr(m, "__all__", ())]
        assert owners, f"{name} is exported by no module of the plan package"
        assert all(getattr(plan, name) is getattr(m, name) for m in owners), name


def test_the_plan_package_exports_the_two_checks_seed_000_names_for_the_plan_and_its_summary() -> None:
    assert {"validate_plan_spec", "validate_summary_candidate"} <= set(plan.__all__)
    assert plan.validate_plan_spec is plan.spec.validate_plan_spec
    assert plan.validate_summary_candidate is plan.spec.validate_summary_candidate
    todo = plan.Todo("t1", "write the fix")
    good = plan.PlanSpec("fix the bug", ("edit",), (), ("run the tests",), (todo,))
    assert plan.validate_plan_spec(good) == ()
    bad = plan.PlanSpec(" ", ("edit",), (), ("run the tests",), (todo,))
    assert [p.code for p in plan.validate_plan_spec(bad)] == ["empty-goal"]
    candidate = {"goal": "fix", "key_steps": ["edit"], "constraints": [], "verify": ["test"], "active_todo_ids": ["t9"]}
    assert [(p.code, p.where) for p in plan.validate_summary_candidate(candidate, good)] == [
        ("unknown-todo-id", "active_todo_ids[0]")
    ]
    assert plan.validate_summary_candidate({**candidate, "active_todo_ids": ["t1"]}, good) == ()


def test_nothing_in_the_plan_package_imports_the_session() -> None:
    """The plan machines know only plan state; what needs the whole session
    lives above it (``kernel.plan_events``, ``kernel.decisions``)."""
    root = Path(plan.__file__).parent
    found = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module or ''}.{a.name}".lstrip(".") for a in node.names)]
                if node.level >= 2 and any(n.split(".")[0] in ("session", "decisions", "plan_events") for n in names):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []
