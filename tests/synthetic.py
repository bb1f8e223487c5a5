"""Synthetic sessions shaped like a long agent run, for tests of other parts and the benchmarks.

A session has ``tool_calls`` tool calls, each followed by its result, with assistant messages
and thinking between them (one message per three tool calls, one thinking block per six),
``evals`` evaluations (three in four pass; speedups drift up, with jumps more likely right after
a question), ``questions`` questions (repertoire, human or agent), and a commit after every
passing eval that sets a new best. The defaults give about 29,500 events.

    from tests.synthetic import generate_session, generate_sessions_fast
    generate_session(root, "s1")                  # through TraceWriter: WAL, segments, compaction
    generate_sessions_fast(root, count=100)       # events.parquet written directly, vectorised

Both write ``session.json`` too. The same ``seed`` gives the same events (ids and timestamps
included), so tests can assert on them.
"""

from __future__ import annotations

import binascii
import json
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.durable import write_parquet_atomic, write_text_atomic
from kernelseek_tui.trace.layout import part_metadata
from kernelseek_tui.trace.pricing import estimate_cost
from kernelseek_tui.trace.schema import EVENT_SCHEMA, to_json_text
from kernelseek_tui.trace.writer import TraceWriter

__all__ = [
    "QUESTIONS",
    "generate_session",
    "generate_sessions_fast",
    "session_table",
]

START_US: Final = 1_780_000_000_000_000  # 2026-05-28, a fixed origin so seeds reproduce


def _repertoire_questions() -> tuple[tuple[str, str], ...]:
    # Draw from the shipped repertoire, so that stats over synthetic traces name real questions.
    import tomllib

    path = Path(__file__).resolve().parents[1] / "repertoire.toml"
    entries = tomllib.loads(path.read_text())["question"]
    return tuple((entry["id"], entry["text"]) for entry in entries)


QUESTIONS: Final = _repertoire_questions()
_TRIGGERS: Final = ("plateau", "limit_claim", "finish_request", "failure_streak", "manual")
_TOOLS: Final = ("bash", "read_file", "write_file", "edit_file", "evaluate", "grep", "list_dir")
_MODELS: Final = ("claude-sonnet-4-5", "claude-opus-4-1")

# Unit kinds before expansion into events.
_TC, _MSG, _THINK, _EVAL, _Q = range(5)


def session_table(
    session_id: str,
    *,
    tool_calls: int = 11_500,
    evals: int = 400,
    questions: int = 160,
    seed: int = 0,
) -> pa.Table:
    """One synthetic session as a table in ``EVENT_SCHEMA``, ``seq`` 0..n-1."""
    rng = np.random.default_rng(seed)
    units = np.concatenate(
        [
            np.full(tool_calls, _TC),
            np.full(tool_calls // 3, _MSG),
            np.full(tool_calls // 6, _THINK),
            np.full(evals, _EVAL),
            np.full(questions, _Q),
        ]
    ).astype(np.int8)
    rng.shuffle(units)
    units = np.concatenate([np.array([_MSG], dtype=np.int8), units])

    speedup, verdict, new_best = _eval_outcomes(units, rng)
    # A tool call unit becomes (tool_call, tool_result); a new-best eval becomes (eval, commit).
    eval_units = np.flatnonzero(units == _EVAL)
    repeat = np.ones(len(units), dtype=np.int64)
    repeat[units == _TC] = 2
    repeat[eval_units[new_best]] = 2
    unit_of_event = np.repeat(np.arange(len(units)), repeat)
    n = len(unit_of_event)
    second = np.zeros(n, dtype=bool)
    second[1:] = unit_of_event[1:] == unit_of_event[:-1]
    unit_kind = units[unit_of_event]

    kind = np.empty(n, dtype=object)
    kind[unit_kind == _MSG] = "message"
    kind[unit_kind == _THINK] = "thinking"
    kind[unit_kind == _Q] = "question"
    kind[(unit_kind == _TC) & ~second] = "tool_call"
    kind[(unit_kind == _TC) & second] = "tool_result"
    kind[(unit_kind == _EVAL) & ~second] = "eval"
    kind[(unit_kind == _EVAL) & second] = "commit"
    masks = {
        k: kind == k
        for k in ("message", "thinking", "question", "tool_call", "tool_result", "eval", "commit")
    }

    columns: dict[str, Any] = {
        name: pa.nulls(n, EVENT_SCHEMA.field(name).type) for name in EVENT_SCHEMA.names
    }
    seq = np.arange(n, dtype=np.int64)
    event_ids = _hex_strings(rng, n, 16)
    columns["session_id"] = pa.array(np.full(n, session_id, dtype=object), pa.string())
    columns["seq"] = pa.array(seq)
    columns["event_id"] = event_ids
    gaps = rng.exponential(1_500_000.0, n).astype(np.int64)  # ~1.5 s between events
    gaps[masks["eval"]] += rng.integers(20_000_000, 90_000_000, int(masks["eval"].sum()))
    columns["ts"] = pa.array(
        START_US + seed * 86_400_000_000 + np.cumsum(gaps), pa.timestamp("us", tz="UTC")
    )
    columns["kind"] = pa.array(kind, pa.string())
    columns["turn"] = pa.array(np.cumsum(masks["message"]).astype(np.int32))

    role = np.full(n, "harness", dtype=object)
    source = np.full(n, "harness", dtype=object)
    agent = masks["message"] | masks["thinking"] | masks["tool_call"]
    role[agent], source[agent] = "assistant", "agent"

    # Tool calls and results.
    tc = masks["tool_call"]
    n_tc = int(tc.sum())
    tool_idx = rng.integers(0, len(_TOOLS), n_tc)
    call_ids = pc.binary_join_element_wise(
        f"toolu_{session_id}_", pa.array(np.arange(n_tc)).cast(pa.string()), ""
    )
    inputs = _pool(rng, 256, lambda i: to_json_text(_tool_input(i)))
    results = _pool(rng, 512, _tool_output)
    tc_pos, tr_pos = np.flatnonzero(tc), np.flatnonzero(masks["tool_result"])
    names = pa.array(np.array(_TOOLS, dtype=object)[tool_idx], pa.string())
    columns["tool_name"] = _scatter(n, [(tc_pos, names), (tr_pos, names)], pa.string())
    columns["tool_call_id"] = _scatter(n, [(tc_pos, call_ids), (tr_pos, call_ids)], pa.string())
    columns["tool_input"] = _scatter(
        n, [(tc_pos, inputs.take(rng.integers(0, len(inputs), n_tc)))], pa.string()
    )
    is_error = rng.random(n_tc) < 0.04
    columns["is_error"] = _scatter(n, [(tr_pos, pa.array(is_error))], pa.bool_())
    parent = event_ids.take(pa.array(tr_pos - 1))
    columns["parent_event_id"] = _scatter(n, [(tr_pos, parent)], pa.string())
    columns["duration_ms"] = _scatter(
        n, [(tr_pos, pa.array(rng.gamma(1.5, 400.0, n_tc)))], pa.float64()
    )

    # Messages and thinking, with model usage on the messages.
    msg_pos, think_pos = np.flatnonzero(masks["message"]), np.flatnonzero(masks["thinking"])
    texts = _pool(rng, 256, _assistant_text)
    thoughts = _pool(rng, 128, _thinking_text)
    text_parts = [
        (msg_pos, texts.take(rng.integers(0, len(texts), len(msg_pos)))),
        (think_pos, thoughts.take(rng.integers(0, len(thoughts), len(think_pos)))),
        (tr_pos, results.take(rng.integers(0, len(results), n_tc))),
    ]
    n_msg = len(msg_pos)
    model_idx = (rng.random(n_msg) < 0.15).astype(np.int64)
    models = np.array(_MODELS, dtype=object)[model_idx]
    context = np.minimum(180_000, 8_000 + np.arange(n_msg) * 40) + rng.integers(0, 4_000, n_msg)
    output_tokens = rng.integers(80, 2_500, n_msg)
    cache_read = (context * 0.9).astype(np.int64)
    cache_write = rng.integers(0, 3_000, n_msg)
    input_tokens = context - cache_read
    prices = {m: estimate_cost(m, 1_000_000, 0) for m in _MODELS}
    out_prices = {m: estimate_cost(m, 0, 1_000_000) for m in _MODELS}
    in_price = np.array([prices[m] for m in models])
    out_price = np.array([out_prices[m] for m in models])
    cost = (
        input_tokens * in_price
        + output_tokens * out_price
        + cache_write * in_price * 1.25
        + cache_read * in_price * 0.1
    ) / 1e6
    columns["model"] = _scatter(n, [(msg_pos, pa.array(models, pa.string()))], pa.string())
    columns["response_id"] = _scatter(
        n,
        [(msg_pos, pc.binary_join_element_wise("msg_", _hex_strings(rng, n_msg, 12), ""))],
        pa.string(),
    )
    columns["stop_reason"] = _scatter(
        n, [(msg_pos, pa.array(np.full(n_msg, "tool_use", dtype=object), pa.string()))], pa.string()
    )
    for name, values in (
        ("input_tokens", input_tokens),
        ("output_tokens", output_tokens),
        ("cache_creation_input_tokens", cache_write),
        ("cache_read_input_tokens", cache_read),
    ):
        columns[name] = _scatter(n, [(msg_pos, pa.array(values.astype(np.int64)))], pa.int64())
    columns["cost_usd"] = _scatter(n, [(msg_pos, pa.array(cost))], pa.float64())

    # Evals and commits.
    ev_pos, commit_pos = np.flatnonzero(masks["eval"]), np.flatnonzero(masks["commit"])
    n_ev = len(ev_pos)
    candidate = _hex_strings(rng, n_ev, 20)
    passed = verdict == "pass"
    best = np.maximum.accumulate(np.where(passed, np.maximum(speedup, 1.0), 1.0))
    total = np.full(n_ev, 24, dtype=np.int32)
    passed_count = np.where(passed, 24, rng.integers(0, 24, n_ev)).astype(np.int32)
    columns["eval_id"] = _scatter(
        n,
        [
            (
                ev_pos,
                pc.binary_join_element_wise("ev", pa.array(np.arange(n_ev)).cast(pa.string()), ""),
            )
        ],
        pa.string(),
    )
    new_best_candidates = candidate.filter(pa.array(new_best))
    columns["candidate_sha"] = _scatter(
        n, [(ev_pos, candidate), (commit_pos, new_best_candidates)], pa.string()
    )
    columns["verdict"] = _scatter(n, [(ev_pos, pa.array(verdict, pa.string()))], pa.string())
    columns["scenarios_passed"] = _scatter(n, [(ev_pos, pa.array(passed_count))], pa.int32())
    columns["scenarios_total"] = _scatter(n, [(ev_pos, pa.array(total))], pa.int32())
    columns["speedup"] = _scatter(
        n, [(ev_pos, pa.array(speedup, mask=~passed))], pa.float64()
    )  # a failed candidate has no speedup to speak of
    columns["best_speedup"] = _scatter(n, [(ev_pos, pa.array(best))], pa.float64())
    columns["vs_fa3"] = _scatter(
        n, [(ev_pos, pa.array(speedup * 0.42, mask=~passed))], pa.float64()
    )
    n_commit = len(commit_pos)
    columns["git_sha"] = _scatter(n, [(commit_pos, _hex_strings(rng, n_commit, 20))], pa.string())
    columns["branch"] = _scatter(
        n,
        [
            (
                commit_pos,
                pa.array(np.full(n_commit, f"kernelseek/{session_id}", dtype=object), pa.string()),
            )
        ],
        pa.string(),
    )
    commit_text = pa.array(
        [f"candidate {i + 1}: {s:.3f}x (24/24)" for i, s in enumerate(speedup[new_best])],
        pa.string(),
    )
    text_parts.append((commit_pos, commit_text))

    # Questions.
    q_pos = np.flatnonzero(masks["question"])
    n_q = len(q_pos)
    q_idx = rng.integers(0, len(QUESTIONS), n_q)
    q_source = np.array(("repertoire", "human", "agent"), dtype=object)[
        rng.choice(3, n_q, p=[0.6, 0.25, 0.15])
    ]
    q_ids = np.array([q[0] for q in QUESTIONS], dtype=object)[q_idx]
    q_ids[q_source == "human"] = None  # a person's own words have no repertoire id
    columns["question_id"] = _scatter(n, [(q_pos, pa.array(q_ids, pa.string()))], pa.string())
    columns["question_text"] = _scatter(
        n,
        [(q_pos, pa.array(np.array([q[1] for q in QUESTIONS], dtype=object)[q_idx], pa.string()))],
        pa.string(),
    )
    columns["trigger"] = _scatter(
        n,
        [
            (
                q_pos,
                pa.array(
                    np.array(_TRIGGERS, dtype=object)[rng.integers(0, len(_TRIGGERS), n_q)],
                    pa.string(),
                ),
            )
        ],
        pa.string(),
    )
    source[q_pos] = q_source
    q_role = np.where(
        q_source == "human", "human", np.where(q_source == "agent", "assistant", "harness")
    )
    role[q_pos] = q_role
    columns["role"] = pa.array(role, pa.string())
    columns["source"] = pa.array(source, pa.string())
    columns["text"] = _scatter(n, text_parts, pa.string())
    columns["attrs"] = _scatter(
        n,
        [
            (
                ev_pos,
                pa.array(
                    [to_json_text({"objective": "default", "seed": int(i)}) for i in range(n_ev)],
                    pa.string(),
                ),
            )
        ],
        pa.string(),
    )
    return pa.Table.from_arrays([columns[name] for name in EVENT_SCHEMA.names], schema=EVENT_SCHEMA)


def generate_session(
    root: Path,
    session_id: str,
    tool_calls: int = 11_500,
    evals: int = 400,
    questions: int = 160,
    seed: int = 0,
    *,
    batch_size: int = 1024,
    writer_options: dict[str, Any] | None = None,
) -> Path:
    """Write one synthetic session through ``TraceWriter`` (WAL, segments, compaction)."""
    table = session_table(
        session_id, tool_calls=tool_calls, evals=evals, questions=questions, seed=seed
    )
    session_dir = Path(root) / session_id
    rows = table.to_pylist()
    with TraceWriter(session_dir, session_id, **(writer_options or {})) as writer:
        for start in range(0, len(rows), batch_size):
            writer.append_many(
                {k: v for k, v in row.items() if v is not None and k not in ("session_id", "seq")}
                | {"ts": _us(row["ts"])}
                for row in rows[start : start + batch_size]
            )
            writer.flush()
    _write_meta(session_dir, session_id, table)
    return session_dir


def generate_sessions_fast(
    root: Path,
    count: int = 100,
    *,
    tool_calls: int = 11_500,
    evals: int = 400,
    questions: int = 160,
    seed: int = 0,
    prefix: str = "synth",
) -> list[Path]:
    """Write ``count`` finished sessions as ``events.parquet`` directly (no WAL, no writer).

    Session ``i`` is ``<prefix>-<i:03d>`` with seed ``seed + i``.
    """
    dirs = []
    for i in range(count):
        session_id = f"{prefix}-{i:03d}"
        table = session_table(
            session_id, tool_calls=tool_calls, evals=evals, questions=questions, seed=seed + i
        )
        paths = SessionPaths(Path(root) / session_id)
        paths.dir.mkdir(parents=True, exist_ok=True)
        table = table.replace_schema_metadata(part_metadata(session_id, 0, table.num_rows - 1))
        write_parquet_atomic(table, paths.events)
        _write_meta(paths.dir, session_id, table)
        dirs.append(paths.dir)
    return dirs


# -- the pieces ---------------------------------------------------------------------------


def _eval_outcomes(
    units: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Speedups and verdicts of the evals in order, and which passing ones set a new best."""
    is_eval = units == _EVAL
    questions_before = np.cumsum(units == _Q)[is_eval]
    asked_since_last = np.diff(np.concatenate([[0], questions_before])) > 0
    n = int(is_eval.sum())
    speedup = np.empty(n)
    verdict = np.empty(n, dtype=object)
    new_best = np.zeros(n, dtype=bool)
    best = 1.0
    for i in range(n):
        passed = rng.random() < 0.75
        jump_chance = 0.12 if asked_since_last[i] else 0.01
        if rng.random() < jump_chance:
            value = best * (1.0 + rng.uniform(0.05, 0.12))
        else:
            value = best * rng.uniform(0.85, 1.01)
        speedup[i] = round(value, 4)
        verdict[i] = "pass" if passed else "fail"
        if passed and value > best:
            best = value
            new_best[i] = True
    return speedup, verdict, new_best


def _hex_strings(rng: np.random.Generator, n: int, nbytes: int) -> pa.Array:
    """``n`` random lowercase hex strings of ``2 * nbytes`` characters, built in one buffer."""
    data = binascii.hexlify(rng.bytes(n * nbytes))
    width = 2 * nbytes
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))


def _pool(rng: np.random.Generator, size: int, make: Any) -> pa.Array:
    return pa.array([make(int(rng.integers(0, 1_000_000))) for _ in range(size)], pa.string())


def _scatter(n: int, parts: list[tuple[np.ndarray, pa.Array]], type_: pa.DataType) -> pa.Array:
    """A column of ``n`` nulls with ``parts`` ([(positions, values)]) filled in."""
    indices = np.full(n, -1, dtype=np.int64)
    pieces = []
    offset = 0
    for positions, values in parts:
        indices[positions] = np.arange(offset, offset + len(positions))
        pieces.append(values.cast(type_) if values.type != type_ else values)
        offset += len(positions)
    if not pieces:
        return pa.nulls(n, type_)
    combined = pa.concat_arrays(
        [p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p for p in pieces]
    )
    mask = indices < 0
    return combined.take(pa.array(np.where(mask, 0, indices), mask=mask))


def _tool_input(i: int) -> dict[str, Any]:
    files = ("kernel.cu", "task.toml", "notes.md", "bench.log", "sm90.cu")
    choice = i % 4
    if choice == 0:
        return {"command": f"nvcc -O3 -arch=sm_90a kernel.cu -o k{i % 97} && ./k{i % 97}"}
    if choice == 1:
        return {"path": files[i % len(files)], "start": i % 400, "lines": 80}
    if choice == 2:
        return {"pattern": f"__syncthreads|cp.async|ldmatrix.*{i % 13}", "path": "."}
    return {
        "path": files[i % len(files)],
        "old": f"BLOCK_M = {64 + i % 3 * 64}",
        "new": f"BLOCK_M = {128 + i % 2 * 64}",
    }


def _tool_output(i: int) -> str:
    lines = 5 + i % 60
    return "\n".join(
        f"{n:5d}  for (int k = 0; k < K; k += TILE_K) {{ acc[{n % 8}] += a[{n}] * b[k]; }}"
        for n in range(lines)
    )


def _assistant_text(i: int) -> str:
    return (
        f"The profile shows the kernel is bound by shared-memory bandwidth on step {i % 50}. "
        "I will restructure the tile loads so that each warp reads a contiguous row, then "
        "re-run the evaluation to check correctness and time it."
    )


def _thinking_text(i: int) -> str:
    return (
        f"Stall reasons: long scoreboard {20 + i % 40}%, barrier {i % 17}%. The softmax "
        "rescale happens once per tile; moving it out of the inner loop may help."
    )


def _us(value: Any) -> int:
    return int(value.timestamp() * 1_000_000) if hasattr(value, "timestamp") else int(value)


def _write_meta(session_dir: Path, session_id: str, table: pa.Table) -> None:
    ts = table.column("ts")
    meta = {
        "session_id": session_id,
        "task_dir": None,
        "agent": "synthetic",
        "model": _MODELS[0],
        "repo": None,
        "branch": f"kernelseek/{session_id}",
        "worktree": None,
        "base_sha": None,
        "pid": None,
        "status": "finished",
        "created": pc.min(ts).as_py().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "updated": pc.max(ts).as_py().strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    write_text_atomic(SessionPaths(session_dir).meta, json.dumps(meta, indent=2) + "\n")
