"""List prices of Anthropic models, for estimating ``cost_usd`` where a source gives only tokens.

USD per million tokens (input, output). Cache writes cost 1.25x the input price and cache reads
0.1x (the 5-minute cache). The table is matched on the model name's family prefix; an unknown
model gives no estimate rather than a wrong one.
"""

from __future__ import annotations

from typing import Final

# (prefix of the model id, input $/MTok, output $/MTok); the first prefix that matches wins,
# so more specific prefixes come first.
PRICES: Final = (
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-3-opus", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-haiku", 0.25, 1.25),
)
CACHE_WRITE_FACTOR: Final = 1.25
CACHE_READ_FACTOR: Final = 0.1


def model_prices(model: str | None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens for a model id, or None when unknown."""
    if not model:
        return None
    for prefix, input_price, output_price in PRICES:
        if model.startswith(prefix):
            return input_price, output_price
    return None


def estimate_cost(
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_creation_input_tokens: int | None = None,
    cache_read_input_tokens: int | None = None,
) -> float | None:
    """The list-price cost in USD of one model response, or None for an unknown model."""
    prices = model_prices(model)
    if prices is None:
        return None
    input_price, output_price = prices
    total = (
        (input_tokens or 0) * input_price
        + (output_tokens or 0) * output_price
        + (cache_creation_input_tokens or 0) * input_price * CACHE_WRITE_FACTOR
        + (cache_read_input_tokens or 0) * input_price * CACHE_READ_FACTOR
    )
    return total / 1_000_000
