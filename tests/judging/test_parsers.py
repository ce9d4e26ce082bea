import pytest

from judging.parsers import Verdict, parse_boxed, parse_prometheus, parse_verdict


@pytest.mark.parametrize(
    ("text", "outcome", "score"),
    [
        ("Good answer. \\boxed{9}", "ok", 9),
        ("First I thought \\boxed{4}, but on reflection \\boxed{ 7 }.", "ok", 7),
        ("Score: 11", "parse_failure", None),
        ("The response is mostly right.", "parse_failure", None),
        ("\\boxed{11}", "out_of_range", 11),
        ("\\boxed{0}", "out_of_range", 0),
        ("\\boxed{8.0}", "ok", 8),
        ("\\boxed{7.5}", "parse_failure", None),
        ("\\boxed{seven}", "parse_failure", None),
        ("", "parse_failure", None),
        (None, "parse_failure", None),
    ],
)
def test_boxed(text, outcome, score):
    parsed = parse_boxed(text)
    assert (parsed.outcome, parsed.score) == (outcome, score)


def test_czech_scale_allows_zero():
    assert parse_boxed("\\boxed{0}", low=0).score == 0


@pytest.mark.parametrize(
    ("text", "outcome", "score"),
    [
        ("Feedback: fine. [RESULT] 4", "ok", 4),
        ("Feedback: x [RESULT] (3)", "ok", 3),
        ("Feedback: [RESULT] 2 ... corrected: [RESULT] 5", "ok", 5),
        ("Feedback: great [RESULT] 6", "out_of_range", 6),
        ("Feedback: no score", "parse_failure", None),
        ("[RESULT] 4.5", "parse_failure", None),
    ],
)
def test_prometheus(text, outcome, score):
    parsed = parse_prometheus(text)
    assert (parsed.outcome, parsed.score) == (outcome, score)


def test_verdicts():
    assert parse_verdict("A is closer. [[A]]").verdict is Verdict.A
    assert parse_verdict("B, clearly. [[B]]").value is Verdict.B
    assert parse_verdict("[[A]] no wait [[C]]").verdict is Verdict.TIE
    failed = parse_verdict("They are equal.")
    assert (failed.outcome, failed.verdict, failed.ok) == ("parse_failure", None, False)


def test_a_verdict_is_stored_as_the_winner_column_and_named_a_b_or_tie():
    assert [str(v) for v in Verdict] == ["first", "second", "tie"]
    assert [v.label for v in Verdict] == ["A", "B", "tie"]
    assert Verdict.from_label("B") is Verdict.B and Verdict.from_label("tie") is Verdict.TIE
    for wrong in ("C", "first", "1", ""):
        with pytest.raises(ValueError, match="choose A, B or tie"):
            Verdict.from_label(wrong)
