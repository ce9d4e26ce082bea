"""Metrics on hand-computed cases and on the published definitions."""

import math

import pytest

from judging.metrics import (
    concordance_index,
    exact_match,
    exponential_similarity,
    multiple_choice_accuracy,
    normalize_answer,
    rouge_geometric_mean,
    token_f1,
)


def test_squad_normalisation_and_f1():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert normalize_answer("Příprava") == "priprava"  # transliterated to ASCII
    # prediction "cat sat on mat" vs "the cat is on the mat": overlap cat, on, mat = 3;
    # precision 3/4, recall 3/4 ("cat is on mat"), F1 0.75
    assert token_f1("cat sat on mat", "the cat is on the mat") == pytest.approx(0.75)
    assert token_f1("Paris", ["London", "paris."]) == 1.0  # max over references
    assert token_f1("", "x") == 0.0 and token_f1("the", "a") == 1.0  # both empty after norm
    assert exact_match("The Paris", "paris") == 1.0 and exact_match("Paris, France", "Paris") == 0


def test_rouge_geometric_mean():
    # identical texts: R-1 = R-2 = R-L = 1
    assert rouge_geometric_mean("the cat sat on the mat", "the cat sat on the mat") == 1.0
    # "the cat sat on the mat" vs "the cat is on the mat": R-1 = R-L = 5/6, R-2 = 3/5
    expected = (5 / 6 * 3 / 5 * 5 / 6) ** (1 / 3)
    assert rouge_geometric_mean("the cat is on the mat", "the cat sat on the mat") == pytest.approx(
        expected
    )
    assert rouge_geometric_mean("dogs bark", "cats meow") == 0.0
    # the maximum of each ROUGE type over references
    assert rouge_geometric_mean("the cat sat", ["a dog ran", "the cat sat"]) == 1.0


def test_multiple_choice_faithful_and_fixed():
    output = "Based on the passage, the answer is C."
    assert multiple_choice_accuracy(output, "C") == 1.0  # fixed: first letter standing alone
    assert (
        multiple_choice_accuracy(output, "C", behaviour="faithful") == 0.0
    )  # reads the B of Based
    assert multiple_choice_accuracy(output, "B", behaviour="faithful") == 1.0
    assert multiple_choice_accuracy("(D) because...", "D") == 1.0
    assert multiple_choice_accuracy("none of them", "A") == 0.0
    with pytest.raises(ValueError):
        multiple_choice_accuracy("A", "A", behaviour="other")


def test_exponential_similarity_zeroscrolls():
    # "the score gets cut by half for every 10 point deviation"
    assert exponential_similarity("40%", "50%") == pytest.approx(0.5)
    assert exponential_similarity("70%", "50%") == pytest.approx(0.25)
    assert exponential_similarity("50 %", "50%") == 1.0
    # the first percentage is the answer (ZeroSCROLLS' footnote example)
    text = "Out of 50 reviews, 20 are positive and 30 negative, so 40% are positive 60% negative."
    assert exponential_similarity(text, "40%") == 1.0
    assert exponential_similarity("about half", "50%") == 0.0


def test_concordance_index():
    assert concordance_index("1, 2, 3, 4", "1 2 3 4") == 1.0
    assert concordance_index("4 3 2 1", "1 2 3 4") == 0.0
    # one swapped neighbour pair of 6 pairs: 5/6
    assert concordance_index("2 1 3 4", "1 2 3 4") == pytest.approx(5 / 6)
    # missing id 4: pairs with 4 do not count as right (3 of 6)
    assert concordance_index("1 2 3", "1 2 3 4") == pytest.approx(3 / math.comb(4, 2))
