"""`kernelseek query` and `kernelseek import` as a user runs them: output, files, errors."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelseek_tui.cli import main
from kernelseek_tui.trace.writer import TraceWriter

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    with TraceWriter(root / "s1", "s1") as writer:
        for i in range(30):
            writer.append(kind="tool_call", tool_name="bash", text=f"call {i} " + "w" * 80)
        writer.append(kind="question", question_id="q1", question_text="Where is the time?")
        writer.append(kind="eval", verdict="pass", speedup=1.4, eval_id="e1")
    return root


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _cli(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        capture_output=True,
        text=True,
        cwd=kwargs.pop("cwd", REPO),
        **kwargs,
    )


def test_query_prints_a_capped_table(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        [
            "query",
            "--traces",
            str(traces),
            "--max-rows",
            "5",
            "--max-width",
            "20",
            "SELECT seq, kind, text FROM events ORDER BY seq",
        ],
        capsys,
    )
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["seq", "kind", "text"]
    assert len(lines) == 2 + 5 + 1
    assert lines[-1] == "Showing 5 of 32 rows"
    assert all(len(line) <= 3 + 2 + 9 + 2 + 20 for line in lines[2:-1])
    assert lines[2].split()[:3] == ["0", "tool_call", "call"]
    assert lines[2].endswith("…")


def test_query_canned_with_params(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["query", "--traces", str(traces), "--canned", "question-jumps", "-p", "threshold=0.2"],
        capsys,
    )
    assert code == 0
    assert "q1" in out and out.strip().endswith("(1 row)")
    code, out, _ = _run(
        ["query", "--traces", str(traces), "--canned", "question-jumps", "-p", "threshold=0.5"],
        capsys,
    )
    assert code == 0 and out.strip().endswith("(0 rows)")
    code, out, _ = _run(
        ["query", "--traces", str(traces), "--canned", "evals", "--session", "s1"], capsys
    )
    assert code == 0 and out.strip().endswith("(1 row)")  # a session that is there


def test_query_help_reads_as_plain_text() -> None:
    result = _cli("query", "--help")
    assert result.returncode == 0 and "%%" not in result.stdout and "more than 5%" in result.stdout


def test_query_csv_json_and_parquet(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sql = "SELECT seq, kind, ts FROM events WHERE seq >= 30 ORDER BY seq"
    code, out, _ = _run(["query", "--traces", str(traces), "--format", "csv", sql], capsys)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["seq"], r["kind"]) for r in rows] == [("30", "question"), ("31", "eval")]

    code, out, _ = _run(["query", "--traces", str(traces), "--format", "json", sql], capsys)
    data = json.loads(out)
    assert [d["kind"] for d in data] == ["question", "eval"]
    assert data[0]["ts"].startswith("20")  # ISO 8601

    target = tmp_path / "out.parquet"
    code, _, _ = _run(
        ["query", "--traces", str(traces), "--format", "parquet", "--output", str(target), sql],
        capsys,
    )
    assert code == 0
    assert pq.read_table(target).column("seq").to_pylist() == [30, 31]


def test_query_parquet_to_a_pipe(traces: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelseek_tui",
            "query",
            "--traces",
            str(traces),
            "--format",
            "parquet",
            "SELECT seq FROM events",
        ],
        capture_output=True,
        cwd=REPO,
    )
    assert result.returncode == 0
    assert pq.read_table(io.BytesIO(result.stdout)).num_rows == 32


def test_query_reads_the_traces_root_from_the_environment(
    traces: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KERNELSEEK_TRACES", str(traces))
    code, out, _ = _run(["query", "SELECT count(*) AS n FROM events"], capsys)
    assert code == 0 and "32" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--traces", "{missing}", "SELECT 1"], "does not exist"),
        (["--traces", "{traces}", "SELEC 1"], "syntax error"),
        (["--traces", "{traces}", "SELECT * FROM nope"], "does not exist"),
        (["--traces", "{traces}", "--canned", "nope"], "no canned query 'nope'"),
        (["--traces", "{traces}", "--canned", "question-jumps", "-p", "k=2"], "no parameter 'k'"),
        (
            ["--traces", "{traces}", "--canned", "question-effect", "-p", "k=x"],
            "wants a whole number",
        ),
        (["--traces", "{traces}"], "give either SQL or --canned"),
        (["--traces", "{traces}", "--canned", "timeline", "--session", "nosuch"], "no session"),
        (["--traces", "{traces}", "--canned", "evals", "-p", "session=s"], "no session 's'"),
    ],
)
def test_query_bad_input_gives_one_line_and_nonzero_exit(
    traces: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [a.format(traces=traces, missing=tmp_path / "missing") for a in args]
    result = _cli("query", *filled)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelseek query: error:")
    assert message in lines[0]


def test_a_corrupt_file_is_a_warning_and_the_query_still_answers(
    traces: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (traces / "broken").mkdir()
    (traces / "broken" / "events.parquet").write_bytes(b"garbage")
    code, out, err = _run(
        ["query", "--traces", str(traces), "SELECT count(*) n FROM events"], capsys
    )
    assert code == 0 and "32" in out
    assert err.count("\n") == 1 and err.startswith("kernelseek query: warning: skipping unreadable")


def test_query_list_names_every_canned_query(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["query", "--list"], capsys)
    assert code == 0
    for name in ("question-jumps", "question-effect", "timeline", "cost", "evals"):
        assert out.count(f"{name}:") == 1


def test_import_then_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "traces"
    code, out, _ = _run(
        ["import", "claude-code", str(FIXTURES / "simple.jsonl"), "--traces", str(root)], capsys
    )
    assert code == 0
    assert out.strip() == (
        f"{FIXTURES / 'simple.jsonl'} -> cc-simple: 8 events added "
        "(1 non-conversation lines skipped)"
    )
    code, out, _ = _run(
        ["import", "claude-code", str(FIXTURES / "simple.jsonl"), "--traces", str(root)], capsys
    )
    assert "0 events added (8 already there" in out
    code, out, _ = _run(
        [
            "query",
            "--traces",
            str(root),
            "--format",
            "json",
            "SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM events",
        ],
        capsys,
    )
    assert json.loads(out) == [{"n": 8, "d": 8}]


def test_import_folder_with_session_id_is_refused(tmp_path: Path) -> None:
    result = _cli(
        "import", "claude-code", str(FIXTURES), "--session-id", "x", "--traces", str(tmp_path)
    )
    assert result.returncode != 0 and "one transcript" in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"# notes\nnot json\n", "line is not JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
        (b'{"a": 1}\n{"b": 2}\n', "no user/assistant"),
        (b"[1, 2]\n", "not a JSON object"),
    ],
)
def test_import_bad_transcripts_give_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    result = _cli("import", "claude-code", str(bad), "--traces", str(tmp_path / "t"))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelseek import: error:")
    assert message in lines[0] and str(bad) in lines[0]


def test_import_a_missing_path_is_an_error(tmp_path: Path) -> None:
    result = _cli("import", "claude-code", str(tmp_path / "nope.jsonl"), "--traces", str(tmp_path))
    assert result.returncode != 0 and "no such file" in result.stderr


def test_import_a_project_imports_every_good_file_and_counts_a_resumed_one_once(
    tmp_path: Path,
) -> None:
    from tests.test_trace_import import _resumed_copy

    project = tmp_path / "project"
    project.mkdir()
    (project / "a-broken.jsonl").write_text('{"type": "user", "uuid": "x"\n{"type": "user"}\n')
    (project / "b-original.jsonl").write_bytes((FIXTURES / "simple.jsonl").read_bytes())
    (project / "c-snapshots.jsonl").write_text(
        '{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}\n'
    )
    _resumed_copy(project / "b-original.jsonl", project / "d-resumed.jsonl")
    root = tmp_path / "traces"
    result = _cli("import", "claude-code", str(project), "--traces", str(root))
    assert result.returncode == 1  # one file failed, and says so
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2 and "Traceback" not in result.stderr
    assert errors[0].startswith("kernelseek import: error: ") and "a-broken.jsonl:1" in errors[0]
    assert errors[1] == "kernelseek import: 1 of 4 files not imported"
    lines = result.stdout.strip().splitlines()
    assert lines[0].endswith("b-original.jsonl -> cc-b-original: 8 events added "
                             "(1 non-conversation lines skipped)")  # fmt: skip
    assert "c-snapshots.jsonl: no conversation in it, nothing imported" in lines[1]
    assert lines[2].endswith(
        "d-resumed.jsonl -> cc-d-resumed: 2 events added "
        "(7 already imported from another file of the project)"
    )
    counted = _cli(
        "query", "--traces", str(root), "--format", "json",
        "SELECT count(*) AS n, count(*) FILTER (WHERE kind = 'tool_call') AS calls FROM events",
    )  # fmt: skip
    assert json.loads(counted.stdout) == [{"n": 10, "calls": 1}]  # not 2: the call once
