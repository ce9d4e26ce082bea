"""The driver's budget: reservations that never let a run's cost pass it."""

import threading
import time

import pytest

from llm.budget import (
    Budget,
    BudgetSpent,
    Prices,
    answer_tokens_allowed,
    counted_tokens,
    most_prompt_tokens,
)


def test_the_most_prompt_tokens_bound_every_byte():
    messages = [{"role": "user", "content": "straße 東京"}]
    # 'straße 東京' is 9 characters and 14 bytes: the bound counts bytes
    assert most_prompt_tokens(messages) == 8 + 8 + 14
    assert answer_tokens_allowed({"max_tokens": 64}, 1) == 64
    assert answer_tokens_allowed({"max_completion_tokens": 9, "max_tokens": 64}, 1) == 9
    assert answer_tokens_allowed({}, 7) == 7
    assert counted_tokens("") == 0 and counted_tokens("abcde") == 2


def test_prices_are_per_million_with_the_run_factor():
    assert Prices(2.0, 8.0).cost(1_000_000, 500_000) == pytest.approx(6.0)
    assert Prices(2.0, 8.0, factor=0.5).cost(1_000_000, 500_000) == pytest.approx(3.0)


def test_no_limit_reserves_nothing_and_counts_what_is_spent():
    budget = Budget(None)
    held = budget.reserve(10.0)
    budget.settle(held, 2.5)
    assert (held, budget.spent, budget.reserved) == (0.0, 2.5, 0.0)


def test_a_reservation_that_cannot_fit_alone_is_refused():
    budget = Budget(1.0, spent=0.7)
    with pytest.raises(BudgetSpent, match="has 0.3 left"):
        budget.reserve(0.31)
    held = budget.reserve(0.3)  # exactly what is left fits
    budget.settle(held, 0.1)
    assert budget.spent == pytest.approx(0.8) and budget.reserved == 0


def test_a_reservation_waits_for_requests_in_flight_to_settle():
    budget = Budget(1.0)
    first = budget.reserve(0.8)
    got: list[float] = []
    waiting = threading.Thread(target=lambda: got.append(budget.reserve(0.5)))
    waiting.start()
    time.sleep(0.3)
    assert not got  # 0.8 + 0.5 would pass 1.0 while the first is in flight
    budget.settle(first, 0.2)  # its real cost was far below what it reserved
    waiting.join(2)
    assert got == [0.5] and budget.reserved == pytest.approx(0.5)


def test_a_waiting_reservation_ends_when_the_run_stops():
    budget = Budget(1.0)
    budget.reserve(0.8)
    stop = threading.Event()
    errors: list[Exception] = []

    def reserve() -> None:
        try:
            budget.reserve(0.5, stop.is_set)
        except BudgetSpent as error:
            errors.append(error)

    waiting = threading.Thread(target=reserve)
    waiting.start()
    stop.set()
    waiting.join(2)
    assert not waiting.is_alive() and len(errors) == 1
