"""A run's money, kept by the driver so that a budget is a hard limit.

Before a request is sent, its most possible cost is reserved: every byte of
the prompt counted as a token (a byte-level BPE token, as GPT's and Llama's
tokenizers make them, is at least one byte), a few tokens a message for the
chat format, and the whole of max_tokens for the answer, at the endpoint's
prices. The answer's real cost then replaces the reservation. A request whose
reservation does not fit waits while others are in flight (their real cost is
usually far below what they reserved) and is refused once nothing else is: so
the run's cost never passes its budget, and a run stops only when its next
request could.

When a server answers without `usage`, the driver counts the tokens itself
(`counted_usage`), as the projection does, so that such a server cannot spend
without limit; the call says its tokens were counted, not reported.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

CHAT_FORMAT_TOKENS_PER_MESSAGE = 8  # role and separators (OpenAI's format uses 3-4)
CHAT_FORMAT_TOKENS_PER_REQUEST = 8  # the assistant's turn header
CHARACTERS_PER_TOKEN = 4  # the usual estimate for English text (OpenAI's rule of thumb)


def most_prompt_tokens(messages: list[dict]) -> int:
    """An upper bound on the prompt's tokens."""
    return CHAT_FORMAT_TOKENS_PER_REQUEST + sum(
        CHAT_FORMAT_TOKENS_PER_MESSAGE + len(str(m.get("content", "")).encode("utf-8"))
        for m in messages
    )


def answer_tokens_allowed(params: dict, default: int) -> int:
    """The answer's limit as the request states it (OpenAI's two names for it)."""
    for name in ("max_completion_tokens", "max_tokens"):
        if params.get(name):
            return int(params[name])
    return default


def counted_tokens(text: str) -> int:
    """Tokens counted by Concord when the server reports none: 4 characters a token."""
    return math.ceil(len(text) / CHARACTERS_PER_TOKEN)


@dataclass(frozen=True)
class Prices:
    """Per million tokens, times the run's price factor (0.5 for the Batch API)."""

    input_per_million: float
    output_per_million: float
    factor: float = 1.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            self.factor
            * (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million)
            / 1e6
        )


class BudgetSpent(Exception):
    """The next request could pass the run's budget."""


class Budget:
    """What a run may still spend: its limit, what it has spent (before this
    worker took it, too) and what the requests in flight have reserved."""

    def __init__(self, limit: float | None, spent: float = 0.0) -> None:
        self.limit = limit
        self.spent = spent
        self.reserved = 0.0
        self.in_flight = 0
        self.changed = threading.Condition()

    def reserve(self, amount: float, stopped: Callable[[], bool] = lambda: False) -> float:
        """Hold `amount` for a request about to be sent; raise BudgetSpent when it
        cannot fit even after every request in flight has settled."""
        if self.limit is None:
            return 0.0
        with self.changed:
            while self.spent + self.reserved + amount > self.limit + 1e-12:
                if self.in_flight == 0 or stopped():
                    raise BudgetSpent(
                        f"the budget of {self.limit:g} has {self.left():.4g} left, and the next "
                        f"request could cost up to {amount:.4g}"
                    )
                self.changed.wait(0.25)
            self.reserved += amount
            self.in_flight += 1
        return amount

    def settle(self, reserved: float, cost: float) -> None:
        """The request's real cost replaces what it reserved."""
        with self.changed:
            self.spent += cost
            if self.limit is not None:
                self.reserved -= reserved
                self.in_flight -= 1
            self.changed.notify_all()

    def left(self) -> float:
        return max(0.0, (self.limit or 0.0) - self.spent)
