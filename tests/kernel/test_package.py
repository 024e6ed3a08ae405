"""The kernel package itself (``kernel/__init__.py``): a short static surface
(the log, the phase, the errors) with each machine a package of its own,
imported on first use so that importing the core stays cheap."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from types import ModuleType

from planfold import kernel
from planfold.kernel import errors, log, phase

MACHINES = ("goal", "graph", "plan", "session", "tools")


def test_the_core_names_are_the_log_the_phase_and_the_errors_and_each_resolves_to_its_module() -> None:
    core = [name for name in kernel.__all__ if name not in MACHINES]
    assert sorted(core) == sorted([*errors.__all__, *log.__all__, *phase.__all__])
    for name in core:
        owner = next(m for m in (errors, log, phase) if name in m.__all__)
        assert getattr(kernel, name) is getattr(owner, name), name


def test_importing_the_kernel_loads_no_machine_until_one_is_imported() -> None:
    code = (
        "import sys, planfold.kernel as k;"
        "print(sorted(m for m in sys.modules if m.startswith('planfold.kernel.')));"
        "from planfold.kernel import goal;"
        "print('planfold.kernel.goal.ops' in sys.modules, 'planfold.kernel.tools.gate' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded, after = out.splitlines()
    core = ["planfold.kernel.errors", "planfold.kernel.log", "planfold.kernel.payload", "planfold.kernel.phase"]
    assert loaded == repr(core)
    assert after.split()[0] == "True"


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
