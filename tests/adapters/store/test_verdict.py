"""``planfold audit``'s verdict as a value (``adapters.store.verdict``), and
a fork's provenance checked against its source session whenever the source
is in the same store: a fork imported with a recomputed digest that claims a
source whose first events hash otherwise fails its audit
(``provenance-source-mismatch``) on every backend, and ``planfold audit``
exits 1 naming the rule."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from planfold.adapters.cli.main import main
from planfold.adapters.codec import encode_jsonl
from planfold.adapters.provenance import ForkProvenance, encode_fork_record, prefix_digest
from planfold.adapters.store.base import AppendRequest, Store
from planfold.adapters.store.contract_logs import FULL_SCRIPT, build_log
from planfold.adapters.store.memory import MemoryStore
from planfold.adapters.store.postgres import PostgresStore
from planfold.adapters.store.sqlite import SqliteStore
from planfold.adapters.store.verdict import AuditFinding, audit_verdict, finding_of
from planfold.kernel.log import Event
from tests.adapters.sqlite_files import write_sqlite

LOG = build_log(FULL_SCRIPT).events
AT = 4


def _edited(events: Sequence[Event]) -> tuple[Event, ...]:
    """``events`` with the first user message's text changed (still a log that folds)."""
    out = list(events)
    index = next(i for i, e in enumerate(out) if e.kind == "user/message")
    out[index] = dataclasses.replace(out[index], payload={**out[index].payload, "text": "not what was said"})
    return tuple(out)


FORGED = _edited(LOG[:AT])
#: A provenance that describes the forged events themselves (a recomputed digest).
FORGED_PROVENANCE = ForkProvenance("a", AT, prefix_digest(FORGED))


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened: Store
    if request.param == "memory":
        opened = MemoryStore()
    elif request.param == "sqlite":
        opened = SqliteStore(tmp_path / "db.sqlite")
    else:
        opened = PostgresStore(request.getfixturevalue("pg_url"))
    try:
        yield opened
    finally:
        opened.close()


def test_a_fork_that_claims_a_source_whose_prefix_hashes_otherwise_fails_its_audit(store: Store) -> None:
    store.append(AppendRequest("a", 0, LOG))
    store.import_fork("f", FORGED, FORGED_PROVENANCE)
    report = store.audit("f")
    assert not report.ok and len(report.mismatches) == 1
    assert report.mismatches[0].startswith("provenance-source-mismatch: ")
    verdict = audit_verdict(store, "f")
    assert not verdict.ok and verdict.rules == ("provenance-source-mismatch",)
    assert verdict.provenance == FORGED_PROVENANCE
    assert "'a'" in verdict.findings[0].detail and FORGED_PROVENANCE.prefix_sha256 in verdict.findings[0].detail
    assert verdict.text() == "FAILS planfold audit: provenance-source-mismatch"
    assert audit_verdict(store, "a").ok  # the source itself is sound


def test_a_fork_that_claims_more_events_than_its_source_holds_fails_its_audit(store: Store) -> None:
    store.append(AppendRequest("a", 0, LOG[: AT - 1]))
    store.import_fork("f", LOG[:AT], ForkProvenance("a", AT, prefix_digest(LOG[:AT])))
    verdict = audit_verdict(store, "f")
    assert verdict.rules == ("provenance-source-mismatch",) and "ends at seq 3" in verdict.findings[0].detail


def test_a_true_fork_and_a_fork_whose_source_is_elsewhere_pass(store: Store) -> None:
    store.append(AppendRequest("a", 0, LOG))
    store.fork("a", AT, "true")
    store.import_fork("from-elsewhere", FORGED, ForkProvenance("not-here", AT, prefix_digest(FORGED)))
    for sid in ("true", "from-elsewhere"):
        verdict = audit_verdict(store, sid)
        assert verdict.ok and verdict.findings == () and verdict.text() == "passes planfold audit"
        assert verdict.last_seq == AT and verdict.provenance is not None


def test_the_verdict_names_the_fold_rule_of_a_bad_log(full_log_file: Path) -> None:
    write_sqlite(full_log_file, "UPDATE events SET seq = 99 WHERE session_id = 's' AND seq = 5")
    with SqliteStore(full_log_file) as store:
        verdict = audit_verdict(store, "s")
    assert not verdict.ok and verdict.snapshot is None
    assert verdict.findings[0].rule == "seq-gap" and verdict.findings[0].position == 6


def test_the_verdict_names_a_projection_that_does_not_match_its_log(full_log_file: Path) -> None:
    write_sqlite(full_log_file, "UPDATE sessions SET agent_mode = 'plan', plan_mode = 1 WHERE id = 's'")
    with SqliteStore(full_log_file) as store:
        verdict = audit_verdict(store, "s")
    assert not verdict.ok and "projection-mismatch" in verdict.rules


#: How ``audit`` says each kind of mismatch: what comes before its detail, the
#: rule it is a finding of, and the detail.
MISMATCHES: dict[str, tuple[str, str, str]] = {
    "a column": ("", "projection-mismatch", "agent_mode: stored 'plan', fold gives 'build'"),
    "the snapshot": ("snapshot: ", "snapshot-mismatch", "decodes to a state other than the fold"),
    "the fork's own prefix": (
        "provenance: ", "provenance-mismatch", "the first 2 events hash to x, not to the recorded y"
    ),
    "the source": (
        "provenance-source-mismatch: ", "provenance-source-mismatch", "the first 2 events of session 'a' here hash to x"
    ),
}


@pytest.mark.parametrize(("said", "rule", "detail"), MISMATCHES.values(), ids=MISMATCHES.keys())
def test_each_kind_of_audit_mismatch_has_its_rule(said: str, rule: str, detail: str) -> None:
    assert finding_of(said + detail) == AuditFinding(rule, None, detail)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err, stdin=io.BytesIO())
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("target", ["sqlite", "postgresql"])
def test_planfold_audit_fails_an_imported_fork_that_claims_a_source_it_did_not_come_from(
    tmp_path: Path, target: str, request: pytest.FixtureRequest
) -> None:
    db = str(tmp_path / "db.sqlite") if target == "sqlite" else request.getfixturevalue("pg_url")
    source: Store = SqliteStore(db) if target == "sqlite" else PostgresStore(db)
    try:
        source.append(AppendRequest("a", 0, LOG))
    finally:
        source.close()
    log = tmp_path / "forged.jsonl"
    log.write_bytes(encode_jsonl(FORGED) + encode_fork_record(FORGED_PROVENANCE) + b"\n")
    assert _run("import", str(log), "--db", db, "--session", "f")[0] == 0
    code, out, _ = _run("audit", db, "--session", "f")
    assert code == 1 and "provenance-source-mismatch" in out
    code, out, _ = _run("audit", db, "--json")
    body = json.loads(out)
    assert code == 1 and body["ok"] is False
    by_session = {s["session"]: s for s in body["sessions"]}
    assert by_session["a"]["ok"] is True and by_session["f"]["ok"] is False
    assert any(m.startswith("provenance-source-mismatch") for m in by_session["f"]["projection"]["mismatches"])
