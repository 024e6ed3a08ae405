"""planfold's own shell executor: one command line, run with bash in the
workspace directory.

Theory of operation
-------------------
``ShellExecutor(root)`` is an ``Executor`` for a shell tool (``origin
"shell"``, arguments ``{command, description?, timeout?}`` as the kernel's
shell classifier reads them). It runs ``bash -c command`` with ``root`` as
the working directory and stdin closed, waits at most ``timeout`` seconds
(the call's own ``timeout`` may only lower the executor's), and answers
``{exit_code, stdout, stderr}``, each stream cut to ``max_output``
characters (decoded as UTF-8 with replacement, so any output is JSON); a
stream that was cut says so in ``truncated``. A command that runs out of
time is killed with its whole process group and is a ``tool-failed``
(``ToolFailure``), and so is bash that cannot be started. A non-zero exit is
not a failure of the tool: the model reads the code.

Git reads run without the programs a repository can name. A line the
classifier proves read-only may still be a git read, and git runs programs
that configuration names even for reads: ``core.fsmonitor`` on every index
refresh, ``diff.external`` and ``diff.<driver>.command`` for a diff,
``diff.<driver>.textconv`` for diffs and blame, the clean filters of
``filter.<driver>`` when ``status`` compares the work tree, ``gpg`` with
``log.showSignature``, a pager. For such a line the executor:

- drops every ``GIT_*`` variable of the environment (``GIT_EXTERNAL_DIFF``,
  ``GIT_DIR``, ``GIT_CONFIG_PARAMETERS`` …), reads no system or global
  configuration (``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``)
  and takes no optional lock (``GIT_OPTIONAL_LOCKS=0``);
- overrides the repository's own with ``GIT_CONFIG_COUNT`` entries, which
  come before every configuration file: ``core.fsmonitor=false``,
  ``core.hooksPath=/dev/null``, ``log.showSignature=false``,
  ``core.pager=cat`` (and ``GIT_PAGER=cat``), and every
  ``filter.<driver>.clean``/``smudge`` set to ``cat`` and ``process`` to
  nothing (the drivers are listed with ``git config``, which runs none);
- runs ``git`` through a shell function that puts ``--no-ext-diff
  --no-textconv`` after ``diff``, ``log`` and ``show``, and
  ``--no-textconv`` after ``blame`` and ``grep`` (the classifier refuses
  their opposites, so no later option turns them back on).

Lines that are not provably read-only (build mode's writes) run as given:
the plan's scope, not this executor, decides whether they may run.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from ...kernel.payload import JSON
from ...kernel.tools.shell import SHELL_ARGUMENT_KEYS, classify_command
from .workspace import ToolFailure, ToolInputError

__all__ = ["GIT_READ_CONFIG", "GIT_READ_PRELUDE", "ShellExecutor", "git_read_environment"]

#: Configuration every git read runs with, before any file's.
GIT_READ_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("log.showSignature", "false"),
    ("core.pager", "cat"),
)

#: The shell function that gives git's reads their no-program options.
GIT_READ_PRELUDE = """git() {
  local pre=()
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do pre+=("$1"); shift; done
  if [ $# -gt 0 ]; then
    local sub="$1"; shift
    case "$sub" in
      diff|log|show) set -- "$sub" --no-ext-diff --no-textconv "$@";;
      blame|grep) set -- "$sub" --no-textconv "$@";;
      *) set -- "$sub" "$@";;
    esac
  fi
  command git "${pre[@]}" "$@"
}
"""

_FILTER_KEYS = r"^filter\..*\.(clean|smudge|process)$"


def _filter_overrides(root: str, env: Mapping[str, str], timeout: float) -> list[tuple[str, str]]:
    """``cat`` (or nothing, for ``process``) for every filter driver the
    repository at ``root`` configures; none when git finds no repository."""
    try:
        listed = subprocess.run(
            ["git", "config", "--null", "--name-only", "--get-regexp", _FILTER_KEYS],
            cwd=root, env=dict(env), capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = [name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name]
    return [(name, "" if name.endswith(".process") else "cat") for name in names]


def git_read_environment(root: str, base: Mapping[str, str], timeout: float = 10.0) -> dict[str, str]:
    """``base`` with git's configured programs switched off (module doc)."""
    env = {key: value for key, value in base.items() if not key.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_PAGER="cat", PAGER="cat", GIT_OPTIONAL_LOCKS="0"
    )
    entries = [*GIT_READ_CONFIG, *_filter_overrides(root, env, timeout)]
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def _cut(data: bytes, limit: int) -> tuple[str, bool]:
    text = data.decode("utf-8", "replace")
    return (text[:limit], True) if len(text) > limit else (text, False)


@dataclass(frozen=True, slots=True)
class ShellExecutor:
    """Runs a shell tool's command with bash in ``root`` (module doc)."""

    root: str
    timeout: float = 60.0
    max_output: int = 64_000

    def __call__(self, args: Mapping[str, object]) -> Mapping[str, JSON]:
        extra = sorted(str(key) for key in args if key not in SHELL_ARGUMENT_KEYS)
        command = args.get("command")
        if extra or not isinstance(command, str):
            raise ToolInputError(f"shell: call with {{\"command\": \"...\"}} (unexpected {extra})")
        timeout = self._timeout(args.get("timeout"))
        env = dict(os.environ)
        script = command
        if classify_command(command).read_only:  # any read-only line may run git (even as g'it')
            env = git_read_environment(self.root, env, timeout)
            script = GIT_READ_PRELUDE + command
        try:
            process = subprocess.Popen(
                ["bash", "-c", script],
                cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise ToolFailure(f"shell: bash could not be started: {exc}") from exc
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise ToolFailure(f"shell: the command ran longer than {timeout:g} seconds and was killed") from None
        stdout, cut_out = _cut(out, self.max_output)
        stderr, cut_err = _cut(err, self.max_output)
        result: dict[str, JSON] = {"exit_code": process.returncode, "stdout": stdout, "stderr": stderr}
        if cut_out or cut_err:
            result["truncated"] = [name for name, cut in (("stdout", cut_out), ("stderr", cut_err)) if cut]
        return result

    def _timeout(self, asked: object) -> float:
        if asked is None:
            return self.timeout
        if isinstance(asked, bool) or not isinstance(asked, (int, float)) or not 0 < asked < float("inf"):
            raise ToolInputError("shell: 'timeout' must be a positive number of seconds")
        return min(float(asked), self.timeout)
