"""The SQL behind the store's derived views and its canned queries.

Definitions the queries share:

- A **jump** is a passing eval (``verdict = 'pass'``, ``speedup`` set) whose speedup beats the
  best passing speedup before it in its session by more than ``threshold`` (relative:
  ``speedup > prev_best * (1 + threshold)``). The starting kernel counts as 1.0x, so the first
  passing eval is a jump when it beats the baseline by the threshold. ``gain`` is
  ``speedup / prev_best - 1``. The same code timed again (a ``candidate_sha`` that passed
  before in the session) is never a jump: what changed is the timing noise, not the kernel.
  It still counts towards the best so far.
- The question **before** a jump is the last ``question`` event with a smaller ``seq`` in the
  same session (ASOF join); ``tool_calls_between`` and ``seconds_between`` measure how far apart
  they were.
- A question is **followed by a jump** when one of the next ``k`` evals after it (any verdict)
  is a jump; its gain is that of the first such jump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

DEFAULT_THRESHOLD: Final = 0.05
DEFAULT_K: Final = 3

# `_marks` holds the evals and questions (a few hundred rows a session, not tens of thousands)
# with a running count of evals. Each macro reads it once, MATERIALIZED, and counts tool calls
# only between the pairs it reports: a window over every tool call was 20x slower.
_PASSED_AND_JUMPS = """
passed AS (
    SELECT session_id, seq, ts, eval_id, candidate_sha, speedup, evals_through,
           coalesce(max(speedup) OVER (PARTITION BY session_id ORDER BY seq
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 1.0) AS prev_best,
           candidate_sha IS NOT NULL AND count(*) OVER (
               PARTITION BY session_id, candidate_sha ORDER BY seq
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) > 0 AS timed_again
    FROM m
    WHERE kind = 'eval' AND verdict = 'pass' AND speedup IS NOT NULL
),
jumped AS (
    SELECT session_id, seq, ts, eval_id, candidate_sha, prev_best, speedup,
           speedup / prev_best - 1.0 AS gain, evals_through
    FROM passed
    WHERE speedup > prev_best * (1.0 + threshold) AND NOT timed_again
)"""

DERIVED_VIEWS: Final = f"""
CREATE VIEW evals AS SELECT * FROM events WHERE kind = 'eval';
CREATE VIEW questions AS SELECT * FROM events WHERE kind = 'question';
CREATE VIEW commits AS SELECT * FROM events WHERE kind = 'commit';
CREATE VIEW tool_calls AS SELECT * FROM events WHERE kind = 'tool_call';

CREATE VIEW _marks AS
SELECT session_id, seq, ts, kind, verdict, speedup, eval_id, candidate_sha,
       question_id, question_text, "trigger", source,
       count(*) FILTER (WHERE kind = 'eval') OVER (
           PARTITION BY session_id ORDER BY seq
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS evals_through
FROM events
WHERE kind IN ('eval', 'question');

CREATE MACRO jumps_at(threshold) AS TABLE
WITH m AS (SELECT * FROM _marks), {_PASSED_AND_JUMPS}
SELECT session_id, seq, ts, eval_id, candidate_sha, prev_best, speedup, gain
FROM jumped;

CREATE MACRO question_jumps_at(threshold) AS TABLE
WITH m AS MATERIALIZED (SELECT * FROM _marks), {_PASSED_AND_JUMPS},
pairs AS (
    SELECT j.session_id,
           j.seq AS eval_seq,
           j.speedup,
           j.prev_best,
           j.gain,
           q.question_id,
           q.question_text,
           (epoch_us(j.ts) - epoch_us(q.ts)) / 1e6 AS seconds_between,
           j.evals_through - q.evals_through - 1 AS evals_between,
           q.seq AS question_seq,
           q."trigger",
           q.source AS question_source,
           j.eval_id,
           j.candidate_sha,
           j.ts AS eval_ts
    FROM jumped AS j
    ASOF LEFT JOIN (SELECT * FROM m WHERE kind = 'question') AS q
        ON j.session_id = q.session_id AND j.seq > q.seq
),
calls AS (
    SELECT p.session_id, p.eval_seq, count(*) AS n
    FROM pairs AS p
    JOIN (SELECT session_id, seq FROM events WHERE kind = 'tool_call') AS t
        ON t.session_id = p.session_id AND t.seq > p.question_seq AND t.seq < p.eval_seq
    GROUP BY p.session_id, p.eval_seq
)
SELECT p.session_id, p.eval_seq, p.speedup, p.prev_best, p.gain, p.question_id, p.question_text,
       CASE WHEN p.question_seq IS NOT NULL THEN coalesce(c.n, 0) END AS tool_calls_between,
       p.seconds_between, p.evals_between, p.question_seq, p."trigger", p.question_source,
       p.eval_id, p.candidate_sha, p.eval_ts
FROM pairs AS p
LEFT JOIN calls AS c ON c.session_id = p.session_id AND c.eval_seq = p.eval_seq;

CREATE MACRO question_effect_at(threshold, k) AS TABLE
WITH m AS MATERIALIZED (SELECT * FROM _marks), {_PASSED_AND_JUMPS},
asked AS (
    SELECT session_id, seq, question_id, question_text, evals_through
    FROM m WHERE kind = 'question'
),
per_ask AS (
    SELECT a.session_id, a.seq, a.question_id, a.question_text,
           arg_min(j.gain, j.seq) AS first_gain,
           count(j.seq) AS jumps
    FROM asked AS a
    LEFT JOIN jumped AS j
        ON j.session_id = a.session_id AND j.seq > a.seq
       AND j.evals_through <= a.evals_through + k
    GROUP BY a.session_id, a.seq, a.question_id, a.question_text
)
SELECT question_id,
       CASE WHEN question_id IS NULL THEN '(asked without an id)'
            ELSE any_value(question_text) END AS question_text,
       count(*) AS asked,
       count(*) FILTER (WHERE jumps > 0) AS followed_by_jump,
       count(*) FILTER (WHERE jumps > 0) / count(*) AS jump_rate,
       median(first_gain) AS median_gain,
       count(DISTINCT session_id) AS sessions
FROM per_ask
GROUP BY question_id;

CREATE VIEW jumps AS SELECT * FROM jumps_at({DEFAULT_THRESHOLD});
CREATE VIEW question_jumps AS SELECT * FROM question_jumps_at({DEFAULT_THRESHOLD});
CREATE VIEW question_effect AS SELECT * FROM question_effect_at({DEFAULT_THRESHOLD}, {DEFAULT_K});
"""

_ONE_LINE = r"left(regexp_replace(left({}, 400), '\s+', ' ', 'g'), 160)"


@dataclass(frozen=True, slots=True)
class CannedQuery:
    """A named query with typed parameters (their defaults give the types)."""

    name: str
    description: str
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    param_help: dict[str, str] = field(default_factory=dict)


_SESSION_HELP = "only this session (default: every session)"

CANNED: Final[dict[str, CannedQuery]] = {
    q.name: q
    for q in (
        CannedQuery(
            name="question-jumps",
            description=(
                "each speedup jump, the question asked last before it, how many tool calls and "
                "seconds separated them, and the gain"
            ),
            sql="""
SELECT * EXCLUDE (eval_ts) FROM question_jumps_at($threshold)
WHERE $session IS NULL OR session_id = $session
ORDER BY session_id, eval_seq
""",
            params={"threshold": DEFAULT_THRESHOLD, "session": None},
            param_help={
                "threshold": "relative gain over the best so far that counts as a jump",
                "session": _SESSION_HELP,
            },
        ),
        CannedQuery(
            name="question-effect",
            description=(
                "per question id: how often it was asked, how often a jump followed within k "
                "evals, and the median gain of that jump"
            ),
            sql="""
SELECT * FROM question_effect_at($threshold, $k)
ORDER BY followed_by_jump DESC, asked DESC, question_id NULLS LAST
""",
            params={"threshold": DEFAULT_THRESHOLD, "k": DEFAULT_K},
            param_help={
                "threshold": "relative gain over the best so far that counts as a jump",
                "k": "how many evals after the question a jump may come",
            },
        ),
        CannedQuery(
            name="timeline",
            description="every event in order, one line each",
            sql=f"""
SELECT session_id, seq, ts, kind, role, source,
       {
                _ONE_LINE.format('''CASE kind
           WHEN 'tool_call' THEN concat(tool_name, ' ', tool_input)
           WHEN 'tool_result' THEN concat(CASE WHEN is_error THEN 'ERROR ' END, text)
           WHEN 'eval' THEN concat_ws(' ', verdict, printf('%.3fx', speedup),
               CASE WHEN scenarios_total IS NOT NULL
                    THEN concat('(', scenarios_passed, '/', scenarios_total, ')') END)
           WHEN 'question' THEN concat('[', coalesce(question_id, source), '] ', question_text)
           WHEN 'commit' THEN concat(left(git_sha, 12), ' ', branch)
           ELSE text END''')
            } AS summary
FROM events
WHERE $session IS NULL OR session_id = $session
ORDER BY session_id, seq
""",
            params={"session": None},
            param_help={"session": _SESSION_HELP},
        ),
        CannedQuery(
            name="cost",
            description="tokens and dollars per session and model, with per-session totals",
            sql="""
SELECT CASE WHEN grouping(session_id) = 1 THEN '(all)' ELSE session_id END AS session_id,
       CASE WHEN grouping(model) = 1 THEN '(all)' ELSE coalesce(model, '(unknown)') END
           AS model,
       count(*) AS responses,
       coalesce(sum(input_tokens), 0)::BIGINT AS input_tokens,
       coalesce(sum(output_tokens), 0)::BIGINT AS output_tokens,
       coalesce(sum(cache_creation_input_tokens), 0)::BIGINT AS cache_creation_input_tokens,
       coalesce(sum(cache_read_input_tokens), 0)::BIGINT AS cache_read_input_tokens,
       round(sum(cost_usd), 4) AS cost_usd
FROM events
WHERE (input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR cost_usd IS NOT NULL)
  AND ($session IS NULL OR session_id = $session)
GROUP BY GROUPING SETS ((session_id, model), (session_id), ())
ORDER BY grouping(session_id), session_id, grouping(model), model
""",
            params={"session": None},
            param_help={"session": _SESSION_HELP},
        ),
        CannedQuery(
            name="evals",
            description="every evaluation with its verdict, speedup and the session's best so far",
            sql="""
SELECT session_id, seq, ts, eval_id, verdict, scenarios_passed AS passed,
       scenarios_total AS total, speedup, vs_fa3,
       max(speedup) FILTER (WHERE verdict = 'pass') OVER (
           PARTITION BY session_id ORDER BY seq
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS best_so_far,
       candidate_sha
FROM evals
WHERE $session IS NULL OR session_id = $session
ORDER BY session_id, seq
""",
            params={"session": None},
            param_help={"session": _SESSION_HELP},
        ),
    )
}
