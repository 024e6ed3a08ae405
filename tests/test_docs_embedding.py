"""Every code block of the sections of ``docs/embedding.md`` on a user's own
openai client and on what each model call cost runs as written, in order and
in one namespace, against the loopback chat server (``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` point the user's client at it): the ``sh`` blocks through
``planfold``'s command line (``pip install`` is checked against the
package's extras instead), the ``toml`` block as the cost table the report
command reads."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.report.usage import parse_costs
from tests.chat_server import Answer, ChatServer, completion, tool_call_json

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "embedding.md"
SECTIONS = ("Bring your own openai client", "What each model call cost")
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    """The (language, code) blocks of the sections this test covers, in order."""
    text = PAGE.read_text(encoding="utf-8")
    found: list[tuple[str, str]] = []
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        title = section.split("\n", 1)[0].strip()
        if title in SECTIONS:
            found += [(m.group(1), m.group(2)) for m in FENCE.finditer(section)]
    return found


@pytest.fixture
def server() -> Iterator[ChatServer]:
    usage = {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 768}}
    with ChatServer() as running:
        for _ in range(2):  # the synchronous turn, then the asyncio one
            running.plan(
                Answer(body=completion(None, [tool_call_json("c1", "read_file", '{"path": "README.md"}')],
                                       usage=usage)),
                Answer(body=completion("It says: # demo", usage=usage)),
            )
        yield running


def test_the_sections_have_python_toml_and_sh_blocks() -> None:
    assert [language for language, _ in blocks()] == ["sh", "python", "python", "python", "toml", "sh"]


def test_every_block_of_the_embedding_sections_runs_as_written(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_embedding"}
    printed = io.StringIO()
    for language, code in blocks():
        if language == "python":
            with contextlib.redirect_stdout(printed):
                exec(compile(code, str(PAGE), "exec"), namespace)  # the documentation's own code
        elif language == "toml":
            parse_costs(tomllib.loads(code), "costs.toml")
            (tmp_path / "costs.toml").write_text(code, encoding="utf-8")
        else:
            argv = shlex.split(code.strip())
            if argv[:2] == ["pip", "install"]:
                extras = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
                assert argv[2] == "planfold[openai]" and re.search(r"^openai = \[", extras, re.MULTILINE)
                continue
            assert argv[0] == "planfold"
            out, err = io.StringIO(), io.StringIO()
            assert main(argv[1:], out=out, err=err, stdin=io.BytesIO()) == 0, err.getvalue()
    lines = printed.getvalue().splitlines()
    assert lines[:2] == ["It says: # demo", "It says: # demo"]
    rows = [line.split() for line in lines[2:]]
    # seq, latency (measured: any whole number), prompt, cached and completion tokens
    assert [(seq, prompt, cached, completion) for seq, _, prompt, cached, completion in rows] == [
        ("4", "900", "768", "20"), ("8", "900", "768", "20")]
    assert all(latency.isdigit() for _, latency, *_ in rows)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Model usage" in page and "USD" in page
    assert server.unplanned == 0 and all(r.headers["authorization"] == "Bearer sk-docs" for r in server.received)


def test_the_python_blocks_type_check_under_mypy_strict(tmp_path: Path) -> None:
    program = tmp_path / "embedding_docs.py"
    program.write_text("\n\n".join(code for language, code in blocks() if language == "python"), encoding="utf-8")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy")]
    done = subprocess.run([*mypy, str(program)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
