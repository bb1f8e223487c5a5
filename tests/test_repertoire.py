"""The repertoire file: the shipped one is clean, and every kind of bad file is caught at its line
by `kernelseek repertoire check`, with no traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from collections import Counter
from pathlib import Path

import pytest

from kernelseek_tui.cli import main
from kernelseek_tui.repertoire import (
    LEVELS,
    REPERTOIRE_ENV,
    TRIGGERS,
    PlainQuestionRecord,
    RepertoireError,
    check_repertoire,
    find_repertoire,
    load_repertoire,
    question_problems,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "repertoire.toml"

GOOD = """\
version = 1

[[question]]
id = "measured-or-assumed"
text = "What did you measure, and what did you only assume?"
level = "measurement"
triggers = ["plateau", "limit_claim"]

[[question]]
id = "limit-true"
text = "What would have to be true for that limit to be real?"
level = "limit-pushback"
triggers = ["limit_claim"]
"""


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "repertoire", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def _write(tmp_path: Path, text: str, name: str = "bad.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_shipped_repertoire_is_clean_and_well_stocked() -> None:
    assert check_repertoire(SHIPPED) == []
    repertoire = load_repertoire(SHIPPED)
    levels = Counter(q.level for q in repertoire)
    assert len(repertoire) >= 40
    assert set(levels) == set(LEVELS), "every level has questions"
    assert levels["limit-pushback"] >= 10
    for trigger in TRIGGERS:
        assert repertoire.select(trigger=trigger), f"no question for {trigger}"


def test_shipped_repertoire_passes_the_cli_check() -> None:
    result = _cli("check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems" in result.stdout


def test_a_good_file_loads_into_questions(tmp_path: Path) -> None:
    repertoire = load_repertoire(_write(tmp_path, GOOD, "good.toml"))
    assert [q.id for q in repertoire] == ["measured-or-assumed", "limit-true"]
    first = repertoire.get("measured-or-assumed")
    assert first is not None
    assert first.level == "measurement"
    assert first.triggers == ("plateau", "limit_claim")
    assert first.line == 3
    assert [q.id for q in repertoire.select(trigger="limit_claim")] == [
        "measured-or-assumed",
        "limit-true",
    ]
    assert [q.id for q in repertoire.select(trigger="plateau")] == ["measured-or-assumed"]
    assert len(repertoire.select(trigger="manual")) == 2  # manual: any question may be offered


BAD_FILES = {
    "bad TOML": (
        """\
        [[question]]
        id = "a"
        text = "What did you measure?
        level = "measurement"
        """,
        3,
        "invalid TOML",
    ),
    "duplicate id": (
        """\
        [[question]]
        id = "same"
        text = "What did you measure?"
        level = "measurement"
        triggers = ["plateau"]

        [[question]]
        id = "same"
        text = "Which part of the time is unexplained?"
        level = "measurement"
        triggers = ["plateau"]
        """,
        8,
        "duplicate id 'same' (first at line 2)",
    ),
    "missing field": (
        """\
        version = 1

        [[question]]
        id = "no-level"
        text = "What did you measure?"
        triggers = ["plateau"]
        """,
        3,
        "question 'no-level' is missing 'level'",
    ),
    "unknown level": (
        """\
        [[question]]
        id = "typo"
        text = "What did you measure?"
        level = "memroy"
        triggers = ["plateau"]
        """,
        4,
        "unknown level 'memroy' (did you mean 'memory'?)",
    ),
    "unknown trigger": (
        """\
        [[question]]
        id = "typo"
        text = "What did you measure?"
        level = "memory"
        triggers = ["plateau", "stuck"]
        """,
        5,
        "unknown trigger 'stuck'",
    ),
    "a digit": (
        """\
        [[question]]
        id = "number"
        text = "What takes the other 40 of the time?"
        level = "measurement"
        triggers = ["plateau"]
        """,
        3,
        "contains a digit",
    ),
    "a technique word": (
        """\
        [[question]]
        id = "leading"
        text = "Where would TMA change the picture?"
        level = "memory"
        triggers = ["plateau"]
        """,
        3,
        "names 'tma' (a technique)",
    ),
    "no question mark": (
        """\
        [[question]]
        id = "statement"
        text = "Tell me what you measured."
        level = "measurement"
        triggers = ["plateau"]
        """,
        3,
        "does not end with '?'",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_file_points_at_the_line_and_exits_one(tmp_path: Path, case: str) -> None:
    source, line, message = BAD_FILES[case]
    _write(tmp_path, source)
    result = _cli("check", "bad.toml", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert any(out.startswith(f"bad.toml:{line}: ") and message in out for out in lines), lines


def test_every_problem_is_reported_not_just_the_first(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        colour = "blue"

        [[question]]
        id = "Bad_Id"
        text = "Could the cache help?"
        level = "memory"
        triggers = []
        trigger = "plateau"
        """,
    )
    problems = [(p.line, p.message) for p in check_repertoire(path)]
    assert (1, "unknown top-level key 'colour'") in problems
    assert any(line == 4 and "lower-case words" in m for line, m in problems)
    assert any(line == 5 and "'cache'" in m for line, m in problems)
    assert any(line == 5 and "yes/no question" in m for line, m in problems)
    assert any(line == 7 and "triggers is empty" in m for line, m in problems)
    assert any(line == 8 and "did you mean 'triggers'?" in m for line, m in problems)
    assert [line for line, _ in problems] == sorted(line for line, _ in problems)


def test_multi_line_strings_do_not_confuse_the_line_numbers(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '''\
        [[question]]
        id = "long"
        text = """What did you
        level = "x"
        measure?"""
        level = "memory"
        triggers = ["plateau"]

        [[question]]
        id = "long"
        text = "Which part of the time is unexplained?"
        level = "memory"
        triggers = ["plateau"]
        ''',
    )
    problems = [str(p) for p in check_repertoire(path)]
    assert any(
        p.endswith(":3: question 'long' runs over more than one line: ask one short question")
        for p in problems
    ), problems
    assert any(":10: duplicate id 'long' (first at line 2)" in p for p in problems), problems


def test_load_raises_with_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, BAD_FILES["unknown level"][0])
    with pytest.raises(RepertoireError, match=r"bad\.toml:4: question 'typo': unknown level"):
        load_repertoire(path)


def test_non_strict_load_keeps_only_the_schema(tmp_path: Path) -> None:
    path = _write(tmp_path, BAD_FILES["a technique word"][0])
    assert [q.id for q in load_repertoire(path, strict=False)] == ["leading"]


def test_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    result = _cli("check", "nothere.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "kernelseek repertoire: error: cannot read nothere.toml: No such file or directory"
    )


@pytest.mark.parametrize(
    "text",
    [
        "What did you measure, and what did you only assume?",
        "Which part of the time have you not yet accounted for?",
        "What would have to be true for that limit to be real?",
        "Where does the data wait, and for what?",
        "What is each thread waiting for, and for how long?",
    ],
)
def test_questions_that_send_to_a_level_pass(text: str) -> None:
    assert question_problems(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Have you tried using TMA?", "'tma'"),
        ("Is your occupancy below 50%?", "contains a digit"),
        ("Is your occupancy below half?", "'occupancy'"),
        ("Could wgmma help?", "'wgmma'"),
        ("What is the shared memory doing?", "'shared memory'"),
        ("Which loop would you unroll?", "'unroll'"),
        ("Where do the registers spill?", "'registers'"),
        ("How would the pipelining change?", "'pipelining'"),
        ("What does the L2 hold?", "'l2'"),
        ("Where are the bank conflicts?", "'bank conflicts'"),
        ("Which loads could be vectorized?", "'vectorized'"),
        ("What would fp8 cost you?", "'fp8'"),
        ("How does CUTLASS do it?", "'cutlass'"),
        ("Where would cp.async go?", "'cp.async'"),
        ("What does the softmax cost?", "'softmax'"),
        ("What would three stages change?", "'three'"),
        ("What about the epilogue?", "'what about'"),
        ("How would a better layout help?", "candidate answer"),
        ("Did you measure it?", "yes/no question"),
        ("What did you measure? And why?", "more than one question"),
        ("What " + "really " * 20 + "matters?", "characters long"),
    ],
)
def test_questions_that_supply_information_fail(text: str, expected: str) -> None:
    problems = question_problems(text)
    assert any(expected in p for p in problems), problems


def test_level_words_are_not_information() -> None:
    for word in ["memory", "instructions", "synchronization", "scheduling", "the algorithm"]:
        assert question_problems(f"What does {word} tell you here?") == [], word


def test_list_filters_by_level_and_trigger() -> None:
    result = _cli("list", "--level", "limit-pushback", "--trigger", "finish_request")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    repertoire = load_repertoire(SHIPPED)
    expected = repertoire.select(level="limit-pushback", trigger="finish_request")
    assert [row.split()[0] for row in rows] == [q.id for q in expected]
    assert all(" limit-pushback " in row and "finish_request" in row for row in rows)
    assert f"{len(expected)} of {len(repertoire)} questions" in result.stderr


def test_list_rejects_an_unknown_level() -> None:
    result = _cli("list", "--level", "memroy")
    assert result.returncode == 2
    assert result.stderr.startswith("kernelseek repertoire: error: unknown level 'memroy'")
    assert "Traceback" not in result.stderr


def _fake_store(stats: dict[str, object]) -> types.ModuleType:
    module = types.ModuleType("kernelseek_tui.trace.store")
    roots: list[Path] = []

    class TraceStore:
        def __init__(self, root: Path) -> None:
            roots.append(root)

        def question_stats(self) -> dict[str, object]:
            return stats

    module.TraceStore = TraceStore  # type: ignore[attr-defined]
    module.roots = roots  # type: ignore[attr-defined]
    return module


def test_stats_ranks_questions_by_their_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _fake_store(
        {
            "limit-true": PlainQuestionRecord(asked=10, followed_by_jump=6, median_gain=1.4),
            "measured-or-assumed": PlainQuestionRecord(
                asked=10, followed_by_jump=1, median_gain=1.1
            ),
            "typed-by-a-person": PlainQuestionRecord(asked=6, followed_by_jump=0),
        }
    )
    monkeypatch.setitem(sys.modules, "kernelseek_tui.trace.store", store)
    good = _write(tmp_path, GOOD, "good.toml")
    traces = tmp_path / "traces"
    (traces / "s1").mkdir(parents=True)
    (traces / "s1" / "session.json").write_text("{}")  # a root with a session: stats are read
    code = main(["repertoire", "stats", "--file", str(good), "--traces", str(traces)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [row[0] for row in rows] == ["limit-true", "measured-or-assumed", "typed-by-a-person"]
    assert rows[0][2:6] == ["10", "6", "60%", "1.4"]
    assert "(not in repertoire)" in out
    assert store.roots == [traces]  # type: ignore[attr-defined]
    assert "26 questions asked" in err and "7 followed by a jump" in err


def test_stats_says_plainly_when_the_trace_store_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # None in sys.modules makes the import fail, as it does before the store is built.
    monkeypatch.setitem(sys.modules, "kernelseek_tui.trace.store", None)
    code = main(["repertoire", "stats", "--file", str(SHIPPED)])
    _, err = capsys.readouterr()
    assert code == 2
    assert "the trace store is not available" in err
    assert "Traceback" not in err


def test_find_repertoire_prefers_explicit_then_env_then_cwd_then_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(REPERTOIRE_ENV, raising=False)
    assert find_repertoire() == SHIPPED
    (tmp_path / "repertoire.toml").write_text(GOOD)
    assert find_repertoire() == Path("repertoire.toml")
    monkeypatch.setenv(REPERTOIRE_ENV, str(tmp_path / "mine.toml"))
    assert find_repertoire() == tmp_path / "mine.toml"
    assert find_repertoire("other.toml") == Path("other.toml")
