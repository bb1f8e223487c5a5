"""Reading and checking ``repertoire.toml``; every problem points at its line.

The file holds an optional ``version = 1`` and one ``[[question]]`` table per question::

    [[question]]
    id = "measured-or-assumed"
    text = "What did you measure, and what did you only assume?"
    level = "measurement"
    triggers = ["plateau", "limit_claim"]

``tomllib`` gives values but not their lines, so a small scan of the source finds the line of
each ``[[question]]`` header and of each key inside it; the n-th header is the n-th table.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.decisions import TRIGGERS
from kernelseek_tui.paths import SHIPPED_REPERTOIRE
from kernelseek_tui.repertoire.model import LEVELS, Problem, Question, Repertoire, RepertoireError
from kernelseek_tui.repertoire.rules import question_problems

SCHEMA_VERSION: Final = 1
REPERTOIRE_ENV: Final = "KERNELSEEK_REPERTOIRE"
DEFAULT_REPERTOIRE: Final = Path("repertoire.toml")
TABLE: Final = "question"
FIELDS: Final = ("id", "text", "level", "triggers")
_TOP_LEVEL_KEYS: Final = ("version", TABLE)
_ID: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

_HEADER: Final = re.compile(rf"""\s*\[\[\s*(?:{TABLE}|"{TABLE}"|'{TABLE}')\s*\]\]\s*(?:#.*)?""")
_OTHER_HEADER: Final = re.compile(r"\s*\[")
_KEY: Final = re.compile(r"""\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")
_TOML_LINE: Final = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")
_TOML_END: Final = re.compile(r"\s*\(at end of document\)\s*$")


@dataclass(slots=True)
class _Table:
    line: int
    keys: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Layout:
    """Where things are in the source: top-level keys and each ``[[question]]`` table."""

    top: dict[str, int] = field(default_factory=dict)
    tables: list[_Table] = field(default_factory=list)


def find_repertoire(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The repertoire to use: ``explicit``, else ``$KERNELSEEK_REPERTOIRE``, else
    ``./repertoire.toml``, else the one shipped with the package."""
    if explicit is not None:
        return Path(explicit).expanduser()
    if os.environ.get(REPERTOIRE_ENV):
        return Path(os.environ[REPERTOIRE_ENV]).expanduser()
    if DEFAULT_REPERTOIRE.is_file():
        return DEFAULT_REPERTOIRE
    if SHIPPED_REPERTOIRE.is_file():
        return SHIPPED_REPERTOIRE
    raise RepertoireError(
        f"no repertoire found: pass a file, set ${REPERTOIRE_ENV}, or add ./{DEFAULT_REPERTOIRE}"
    )


def check_repertoire(path: str | os.PathLike[str]) -> list[Problem]:
    """Every problem of a repertoire file, in line order (empty when it is clean).

    Raises ``RepertoireError`` only when the file cannot be read at all.
    """
    problems, _ = _check(path, text_rules=True)
    return problems


def load_repertoire(path: str | os.PathLike[str], *, strict: bool = True) -> Repertoire:
    """Load a repertoire; raises ``RepertoireError`` ("FILE:LINE: message") on any problem.

    With ``strict=False`` only the schema is enforced, not the rules of a question's text.
    """
    problems, questions = _check(path, text_rules=strict)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RepertoireError(f"{problems[0]}{more}", problems)
    return Repertoire(Path(path), tuple(questions))


def _check(
    path: str | os.PathLike[str], *, text_rules: bool
) -> tuple[list[Problem], list[Question]]:
    name = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise RepertoireError(f"cannot read {name}: {error.strerror or error}") from None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        return [Problem(name, line, "not valid UTF-8 text")], []
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        return [_toml_problem(name, source, str(error))], []
    layout = _scan(source)
    checker = _Checker(name, layout, text_rules)
    questions = checker.run(data)
    return sorted(checker.problems, key=lambda p: p.line), questions


def _toml_problem(name: str, source: str, message: str) -> Problem:
    found = _TOML_LINE.search(message)
    if found:
        line = int(found.group(1))
        message = message[: found.start()]
    elif _TOML_END.search(message):
        line = max(source.count("\n") + (0 if source.endswith("\n") else 1), 1)
        message = _TOML_END.sub("", message)
    else:
        line = 1
    return Problem(name, line, f"invalid TOML: {message}")


def _scan(source: str) -> _Layout:
    layout = _Layout()
    table: _Table | None = None
    in_other_table = False
    open_string: str | None = None  # the delimiter of a multi-line string still open
    for number, line in enumerate(source.splitlines(), start=1):
        if open_string is not None:
            if line.count(open_string) % 2 == 1:
                open_string = None
            continue
        if _HEADER.fullmatch(line):
            table = _Table(number)
            layout.tables.append(table)
            continue
        if _OTHER_HEADER.match(line):
            table, in_other_table = None, True
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        name = key.group(1).strip("\"'")
        if table is not None:
            table.keys.setdefault(name, number)
        elif not in_other_table:
            layout.top.setdefault(name, number)
        rest = line[key.end() :]
        for delimiter in ('"""', "'''"):
            if rest.count(delimiter) % 2 == 1:
                open_string = delimiter
    return layout


class _Checker:
    """Collects the problems of one parsed file and builds its questions."""

    def __init__(self, name: str, layout: _Layout, text_rules: bool) -> None:
        self.name = name
        self.layout = layout
        self.text_rules = text_rules
        self.problems: list[Problem] = []
        self._ids: dict[str, int] = {}
        self._texts: dict[str, tuple[str, int]] = {}

    def add(self, line: int, message: str) -> None:
        self.problems.append(Problem(self.name, line, message))

    def run(self, data: dict[str, Any]) -> list[Question]:
        for key in data:
            if key not in _TOP_LEVEL_KEYS:
                self.add(
                    self.layout.top.get(key, 1),
                    f"unknown top-level key {key!r}{_suggest(key, _TOP_LEVEL_KEYS)}",
                )
        if "version" in data and data["version"] != SCHEMA_VERSION:
            self.add(
                self.layout.top.get("version", 1),
                f"version is {data['version']!r}; this kernelseek reads version {SCHEMA_VERSION}",
            )
        tables = data.get(TABLE)
        table_line = self.layout.top.get(TABLE, 1)
        if tables is None:
            self.add(1, f"no questions: add [[{TABLE}]] tables")
            return []
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            self.add(table_line, f"{TABLE!r} must be an array of tables, written [[{TABLE}]]")
            return []
        if not tables:
            self.add(table_line, f"no questions: add [[{TABLE}]] tables")
        questions = []
        for index, table in enumerate(tables):
            # An inline array has no headers to scan: point at the array itself.
            layout = (
                self.layout.tables[index] if index < len(self.layout.tables) else _Table(table_line)
            )
            question = self.question(table, layout)
            if question is not None:
                questions.append(question)
        return questions

    def question(self, table: dict[str, Any], layout: _Table) -> Question | None:
        def line_of(key: str) -> int:
            return layout.keys.get(key, layout.line)

        raw_id = table.get("id")
        label = f"question {raw_id!r}" if isinstance(raw_id, str) and raw_id else "question"
        count = len(self.problems)
        for key in table:
            if key not in FIELDS:
                self.add(line_of(key), f"{label}: unknown key {key!r}{_suggest(key, FIELDS)}")
        missing = [key for key in FIELDS if key not in table]
        if missing:
            names = ", ".join(repr(key) for key in missing)
            self.add(layout.line, f"{label} is missing {names}")

        question_id, text, level, triggers = (table.get(key) for key in FIELDS)
        if "id" in table:
            self.check_id(question_id, line_of("id"))
        if "text" in table:
            self.check_text(label, text, line_of("text"))
        if "level" in table and not isinstance(level, str):
            self.add(line_of("level"), f"{label}: level must be a string")
        elif "level" in table and level not in LEVELS:
            self.add(line_of("level"), f"{label}: unknown level {level!r}{_choices(level, LEVELS)}")
        if "triggers" in table:
            self.check_triggers(label, triggers, line_of("triggers"))
        if len(self.problems) > count:
            return None
        # Every field was checked above: table[...] holds the right types here.
        return Question(
            table["id"],
            table["text"].strip(),
            table["level"],
            tuple(table["triggers"]),
            layout.line,
        )

    def check_id(self, question_id: Any, line: int) -> None:
        if not isinstance(question_id, str):
            self.add(line, "id must be a string")
        elif not _ID.fullmatch(question_id):
            self.add(line, f"id {question_id!r} must be lower-case words joined by '-'")
        elif question_id in self._ids:
            self.add(line, f"duplicate id {question_id!r} (first at line {self._ids[question_id]})")
        else:
            self._ids[question_id] = line

    def check_text(self, label: str, text: Any, line: int) -> None:
        if not isinstance(text, str):
            self.add(line, f"{label}: text must be a string")
            return
        if self.text_rules:
            for message in question_problems(text):
                self.add(line, f"{label} {message}")
        key = " ".join(text.lower().split())
        if key in self._texts:
            other, other_line = self._texts[key]
            self.add(line, f"{label} has the same text as {other} (line {other_line})")
        elif key:
            self._texts[key] = (label, line)

    def check_triggers(self, label: str, triggers: Any, line: int) -> None:
        if not isinstance(triggers, list) or not all(isinstance(t, str) for t in triggers):
            self.add(line, f"{label}: triggers must be a list of strings")
            return
        if not triggers:
            self.add(
                line, f"{label}: triggers is empty; name at least one of {', '.join(TRIGGERS)}"
            )
        for trigger in triggers:
            if trigger not in TRIGGERS:
                self.add(line, f"{label}: unknown trigger {trigger!r}{_choices(trigger, TRIGGERS)}")
        repeated = sorted({t for t in triggers if triggers.count(t) > 1})
        if repeated:
            self.add(line, f"{label}: trigger {', '.join(map(repr, repeated))} listed twice")


def _suggest(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _choices(word: Any, choices: tuple[str, ...]) -> str:
    hint = _suggest(word, choices) if isinstance(word, str) else ""
    return f"{hint}; expected one of {', '.join(choices)}"
