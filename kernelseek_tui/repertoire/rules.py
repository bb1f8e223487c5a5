"""The rules a question's text must keep, as far as a program can check them.

A good question sends the agent to a level of the system (measurement, memory, instructions,
synchronization, scheduling, the algorithm) or pushes back on a limit it declared; it never
supplies information. So words that name a *level* are fine ("memory", "instructions",
"waiting", "the algorithm"), and words that name a *thing at that level* are not: a technique
("tiling", "pipelining"), a hardware detail ("shared memory", "registers", "warps"), a metric
that points at a diagnosis ("occupancy", "bandwidth"), a tool, a library, a detail of the
problem being solved ("softmax", "masking"), or a number. A question is also one short, open
question: a yes/no question ("Could X help?") carries its candidate answer inside it.
"""

from __future__ import annotations

import re
from typing import Final

MAX_QUESTION_CHARS: Final = 100

_TECHNIQUE = "a technique"
_HARDWARE = "a hardware detail"
_METRIC = "a metric that points at a diagnosis"
_TOOL = "a tool"
_LIBRARY = "a library"
_DOMAIN = "a detail of the problem"
_NUMBER = "a number"

# (regex matched as whole words on the lower-cased text, what it names). Earlier entries win
# where two overlap, so the specific phrases ("shared memory") come before their parts.
_VOCABULARY: Final = (
    (r"cp\.async", _TECHNIQUE),
    (r"tma", _TECHNIQUE),
    (r"w?gmma|mma|hmma|ldmatrix|stmatrix", _TECHNIQUE),
    (r"async\w*|asynchronous(?:ly)?", _TECHNIQUE),
    (r"warp[- ]?speciali[sz]\w*", _TECHNIQUE),
    (r"producer[- ]consumer", _TECHNIQUE),
    (r"pipelin\w*", _TECHNIQUE),
    (r"swizzl\w*", _TECHNIQUE),
    (r"vectori[sz]\w*", _TECHNIQUE),
    (r"unroll\w*", _TECHNIQUE),
    (r"coalesc\w*", _TECHNIQUE),
    (r"prefetch\w*", _TECHNIQUE),
    (r"(?:double|multi|triple)[- ]?buffer\w*", _TECHNIQUE),
    (r"til(?:e|es|ed|ing)", _TECHNIQUE),
    (r"fus(?:e|ed|es|ing|ion)", _TECHNIQUE),
    (r"split[- ]?(?:k|kv)|stream[- ]?k", _TECHNIQUE),
    (r"persistent", _TECHNIQUE),
    (r"multicast\w*", _TECHNIQUE),
    (r"shuffl\w*|shfl\w*", _TECHNIQUE),
    (r"atomic\w*", _TECHNIQUE),
    (r"quantiz\w*|quantis\w*", _TECHNIQUE),
    (r"recomput\w*", _TECHNIQUE),
    (r"inlin(?:e|ed|ing)|intrinsics?", _TECHNIQUE),
    (r"fast[- ]?math", _TECHNIQUE),
    (r"inline\s+assembly|asm|ptx|sass", _TECHNIQUE),
    (r"launch[- ]bounds", _TECHNIQUE),
    (r"lookup\s+tables?", _TECHNIQUE),
    (r"tensor[- ]?cores?", _HARDWARE),
    (r"cuda[- ]cores?", _HARDWARE),
    (r"(?:shared|global|local|constant|texture|distributed\s+shared)\s+memory", _HARDWARE),
    (r"smem|gmem|hbm|dram|sram|vram", _HARDWARE),
    (r"l[0-9]|caches?|cached|caching", _HARDWARE),
    (r"registers?|spill\w*", _HARDWARE),
    (r"bank\s+conflicts?|banks?", _HARDWARE),
    (r"warp\s*groups?|warps?|lanes?", _HARDWARE),
    (r"thread\s*blocks?|ctas?|clusters?", _HARDWARE),
    (r"sms?|streaming\s+multiprocessors?|multiprocessors?", _HARDWARE),
    (r"waves?|wavefronts?", _HARDWARE),
    (r"sectors?|cache\s+lines?|transactions?", _HARDWARE),
    (r"fma\w*|sfu|alus?", _HARDWARE),
    (r"barriers?|mbarriers?|syncthreads|fences?", _HARDWARE),
    (r"hopper|ampere|blackwell|nvlink|pcie", _HARDWARE),
    (r"(?:fp|bf|tf|int)\s?[0-9]+|half[- ]precision|precision|mixed\s+precision", _HARDWARE),
    (r"occupancy", _METRIC),
    (r"bandwidth|throughput|latenc(?:y|ies)", _METRIC),
    (r"[tgm]?flops|ipc|arithmetic\s+intensity", _METRIC),
    (r"(?:memory|compute|latency)[- ]bound", _METRIC),
    (r"ncu|nsight\w*|nvprof|cuobjdump|nvdisasm|compute[- ]sanitizer|roofline", _TOOL),
    (r"cutlass|cute|cub|cublas\w*|cudnn|thrust|triton|torch|pytorch", _LIBRARY),
    (r"flash\w*|fa[0-9]", _LIBRARY),
    (r"softmax|exp2?|exponent\w*|log[- ]?sum[- ]?exp|lse|rescal\w*", _DOMAIN),
    (r"mask\w*|causal|gqa|mqa|kv|qk|head\s*dims?|headdim", _DOMAIN),
    (r"gemms?|matmuls?|dot\s+products?", _DOMAIN),
    (
        r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
        r"sixty|seventy|eighty|ninety|hundreds?|thousands?|millions?|billions?|dozens?",
        _NUMBER,
    ),
    (r"half|twice|double|triple|quadruple|percent\w*|magnitudes?", _NUMBER),
)
_VOCABULARY_PATTERNS: Final = tuple(
    (re.compile(rf"(?<!\w)(?:{pattern})(?!\w)"), what) for pattern, what in _VOCABULARY
)

# Phrasings that hand the agent a candidate answer even when the answer itself is not on the
# deny-list ("Have you tried the obvious thing?").
_LEADING: Final = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b(?:have|did)\s+you\s+(?:tried|try|considered|consider|thought\s+(?:about|of))\b",
        r"\b(?:what|how)\s+about\b",
        r"\bwhy\s+not\b",
        r"\b(?:could|would|might|will|can|does|do)\s+(?:[\w.-]+\s+){1,3}?help\b"
        r"(?!\s+(?:you|us|me)\b)",
        r"\btry(?:ing)?\s+(?:using|adding|switching|moving|replacing)\b",
        r"\binstead\s+of\s+using\b",
    )
)

# A question that opens with an auxiliary verb wants a yes or a no.
_CLOSED_OPENER: Final = re.compile(
    r"(?:is|are|was|were|am|do|does|did|have|has|had|could|should|would|may|might|must)(?:n't)?"
    r"|can|can't|cannot|will|won't|shall"
)


def question_problems(text: str) -> list[str]:
    """Every rule ``text`` breaks (empty when it keeps them all).

    Each message completes the phrase "the question ...", e.g. "does not end with '?'". Usable
    on any candidate question, not only those of a repertoire file.
    """
    stripped = text.strip()
    if not stripped:
        return ["is empty"]
    problems: list[str] = []
    if "\n" in stripped:
        problems.append("runs over more than one line: ask one short question")
    if len(stripped) > MAX_QUESTION_CHARS:
        problems.append(
            f"is {len(stripped)} characters long (at most {MAX_QUESTION_CHARS}): "
            "keep it one short question"
        )
    if not stripped.endswith("?"):
        problems.append("does not end with '?'")
    elif stripped.count("?") > 1:
        problems.append("asks more than one question: ask one")
    digits = sorted({ch for ch in stripped if ch.isdigit()})
    if digits:
        problems.append(
            f"contains a digit ({', '.join(map(repr, digits))}): a question supplies no numbers"
        )
    lowered = " ".join(stripped.lower().split())
    problems.extend(_vocabulary_problems(lowered))
    for pattern in _LEADING:
        match = pattern.search(lowered)
        if match:
            problems.append(
                f"uses {match.group(0)!r}, which hands the agent a candidate answer: "
                "ask where to look, not what to do"
            )
    first = re.match(r"[\w']+", lowered)
    if first and _CLOSED_OPENER.fullmatch(first.group(0)):
        problems.append(
            f"opens with {first.group(0)!r}: a yes/no question carries its answer inside it; "
            "ask an open one (what, which, where, how, why)"
        )
    return problems


def _vocabulary_problems(lowered: str) -> list[str]:
    taken: list[tuple[int, int]] = []
    problems: list[str] = []
    for pattern, what in _VOCABULARY_PATTERNS:
        for match in pattern.finditer(lowered):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            taken.append((start, end))
            problems.append(
                f"names {match.group(0)!r} ({what}): a question points to a level of the "
                "system, never to an answer"
            )
    return problems
