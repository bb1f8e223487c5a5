"""What the model is told: the objective, the workspace and the tools; nothing about how.

The system prompt states the goal and the rules of judgement and lists the tools. It names no
optimisation technique and gives no hint of what to try: that is the agent's work, and the
questions the harness asks later are about where to look, never what to find.
"""

from __future__ import annotations

from kernelseek_tui.session.agents.base import AgentContext
from kernelseek_tui.session.tools import TOOL_SPECS, ToolSpec
from kernelseek_tui.task import Task

QUESTION_PREFIX = "Question from the harness: "


def question_message(text: str) -> str:
    """A question as the short user message the agent reads."""
    return QUESTION_PREFIX + text


def describe_objective(task: Task, objective_sets: list[str] | None) -> str:
    """The scenario sets (with counts) that verify a candidate, in words."""
    names = objective_sets or list(task.objective_sets)
    parts = []
    for name in names:
        count = len(task.scenarios(name))
        timed = ", timed" if task.sets[name].timed else ""
        parts.append(f"'{name}' ({count} scenarios{timed})")
    text = ", ".join(parts)
    if objective_sets is None and task.objective_random:
        text += (
            f", plus {task.objective_random} fresh random held-out scenarios drawn anew each time"
        )
    return text


def system_prompt(ctx: AgentContext, *, shell_timeout_s: float, shell_output_chars: int) -> str:
    """The stable system prompt of a session (cached by the API across calls)."""
    task = ctx.task
    kernel = ctx.kernel_path
    sets = ", ".join(f"'{name}'" for name in sorted(task.sets))
    offered = ctx.offered_tools
    tools = "\n".join(f"- {spec.name}: {spec.description}" for spec in offered)
    # The control arm of an experiment hears no questions: its prompt does not promise any.
    questions = (
        "From time to time the harness puts a short question to you. It is not an instruction; "
        "weigh it and let it shape what you do next. "
        if any(spec.name == "draw_question" for spec in offered)
        else ""
    )
    return f"""You are working on one CUDA kernel inside a harness that judges every candidate.

The kernel is the file `{kernel}` of your workspace, the directory your tools work in (paths \
are relative to it; nothing outside it can be reached). Its other files (task.toml, the \
scenario files, the reference) describe the task and are there to read; editing them changes \
nothing, because the judge keeps its own copy.

Objective: make `{kernel}` as fast as you can while it stays correct. A candidate is verified \
when every scenario of the objective passes: {describe_objective(task, ctx.objective_sets)}. \
A scenario passes when the outputs match the reference within the tolerance task.toml states. \
Speed is the geometric mean, over the timed scenarios, of the starting kernel's time divided \
by the candidate's; the evaluation also compares it with the peers the task names. Each \
verified candidate is committed to the session's git branch. The scenario sets are {sets}; \
task.toml also lists the knobs the evaluate tool can set.

Rules: the kernel stays one self-contained .cu file with the entry point, the includes and the \
libraries task.toml allows; the harness builds it with nvcc and the task's flags.

Tools:
{tools}
run_shell stops a command after {shell_timeout_s:g} s and keeps {shell_output_chars} characters \
of its output.

{questions}When you want to stop, call finish with your reason."""


def first_message(ctx: AgentContext) -> str:
    return (
        f"Begin. The kernel to make faster is `{ctx.kernel_path}`; the workspace holds the task "
        "as it was when the session started."
    )


def tool_params(specs: tuple[ToolSpec, ...] = TOOL_SPECS) -> list[dict[str, object]]:
    """The tools for the Messages API, the last one marking the end of the cached prefix."""
    params: list[dict[str, object]] = [spec.to_api() for spec in specs]
    params[-1] = {**params[-1], "cache_control": {"type": "ephemeral"}}
    return params
