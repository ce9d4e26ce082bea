"""The probability of the score a judge wrote, from its tokens: the tokens
overlapping the parsed score's characters, their probabilities multiplied;
None where the tokens do not spell the stored answer."""

from __future__ import annotations

import math

import pytest

from judging.parsers import parse_boxed, parse_prometheus, parse_verdict
from judging.token_probability import span_probability


def tokens(*pairs):
    return [[token, math.log(p)] for token, p in pairs]


def test_a_score_of_one_token_is_that_token_s_probability():
    answer = tokens(("Good", 0.9), (" answer.", 0.8), (" \\boxed{", 0.99), ("7", 0.42), ("}", 1.0))
    text = "Good answer. \\boxed{7}"
    parsed = parse_boxed(text)
    assert text[slice(*parsed.span)] == "7"
    assert span_probability(answer, text, parsed.span) == pytest.approx(0.42, rel=1e-12)


def test_a_score_over_two_tokens_and_a_token_beyond_it_multiply():
    # "10" written as "1" and "0}" (a token that runs past the score counts)
    answer = tokens(("[RESULT] ", 0.9), ("1", 0.6), ("0}", 0.5))
    text = "[RESULT] 10}"
    assert span_probability(answer, text, (9, 11)) == pytest.approx(0.3, rel=1e-12)
    # the last [RESULT] is the one read, and only its tokens count
    answer = tokens(("[RESULT] ", 0.9), ("3", 0.2), (" or [RESULT] ", 0.9), ("4", 0.7))
    text = "[RESULT] 3 or [RESULT] 4"
    parsed = parse_prometheus(text)
    assert parsed.value == 4
    assert span_probability(answer, text, parsed.span) == pytest.approx(0.7, rel=1e-12)


def test_a_verdict_letter_inside_a_token():
    answer = tokens(("A is better. ", 0.9), ("[[", 0.95), ("B", 0.55), ("]]", 0.99))
    text = "A is better. [[B]]"
    parsed = parse_verdict(text)
    assert span_probability(answer, text, parsed.span) == pytest.approx(0.55, rel=1e-12)
    whole = tokens(("A is better. ", 0.9), ("[[B]]", 0.35))
    assert span_probability(whole, text, parsed.span) == pytest.approx(0.35, rel=1e-12)


def test_tokens_around_a_stored_answer_that_was_trimmed():
    # a server's leading space, the stored answer without it: found within
    answer = tokens((" \\boxed{", 0.9), ("5", 0.25), ("}", 0.99))
    text = "\\boxed{5}"
    assert span_probability(answer, text, parse_boxed(text).span) == pytest.approx(0.25)


def test_tokens_that_do_not_spell_the_answer_give_none():
    answer = tokens(("Something", 0.9), (" else", 0.9))
    assert span_probability(answer, "\\boxed{5}", (7, 8)) is None
    assert span_probability(answer, "", (0, 0)) is None
