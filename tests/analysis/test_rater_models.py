"""Rater models (analysis.statistics.rater_models): Dawid-Skene through
crowd-kit against the EM of Dawid & Skene (1979) transcribed below, the
rater-offset model against ordinary least squares (statsmodels), and MACE and
GLAD on a simulated crowd whose spammers and harsh rater are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.statistics import rater_models as rm

pytest.importorskip("crowdkit.aggregation", reason="crowd-kit is a dependency")


def crowd(seed: int = 0, items: int = 240, raters: int = 10, per_item: int = 4):
    """Ratings of a crowd on 1-10: three spammers (uniform), one rater 3
    points harsher than the rest, the others the quality plus noise."""
    rng = np.random.default_rng(seed)
    quality = rng.uniform(1, 10, items)
    offset = rng.normal(0, 0.5, raters)
    offset[3] = -3.0
    rows = []
    for i in range(items):
        for r in rng.choice(raters, per_item, replace=False):
            if r < 3:
                score = float(rng.integers(1, 11))
            else:
                score = float(np.clip(np.round(quality[i] + offset[r] + rng.normal(0, 0.6)), 1, 10))
            rows.append((i, f"r{r}", score))
    return pd.DataFrame(rows, columns=["response_id", "rater", "score"]), offset


def test_rubric_levels_are_the_rubrics_anchors():
    assert [rm.rubric_level(s) for s in range(1, 11)] == [
        "1", "2", "3-4", "3-4", "5-6", "5-6", "7-8", "7-8", "9", "10",
    ]  # fmt: skip
    # a mean between two levels goes to its nearest integer's
    assert rm.rubric_level(2.49) == "2" and rm.rubric_level(4.5) == "5-6"
    assert rm.rubric_level(0.2) == "1" and rm.rubric_level(10.4) == "10"


def dawid_skene_em(labels: pd.DataFrame, steps: int):
    """Dawid & Skene's EM as crowd-kit runs it: from the shares of the votes
    (crowd-kit's MajorityVote probabilities), priors the mean posterior, each rater's matrix
    P(label given | true label) from posterior-weighted counts of the labels
    they gave (floored at 1e-10, crowd-kit's _EPS), the posterior from
    prior x product of the raters' entries."""
    workers, w = np.unique(labels["worker"], return_inverse=True)
    tasks, t = np.unique(labels["task"], return_inverse=True)
    levels, k = np.unique(labels["label"], return_inverse=True)
    eps = 1e-10
    counts = np.zeros((len(tasks), len(levels)))
    np.add.at(counts, (t, k), 1.0)
    post = counts / counts.sum(axis=1, keepdims=True)

    def m_step(post):
        errors = np.zeros((len(workers), len(levels), len(levels)))  # worker, given, true
        np.add.at(errors, (w, k), post[t])
        given = np.zeros((len(workers), len(levels)), bool)
        given[w, k] = True
        errors = np.where(given[:, :, None], np.maximum(errors, eps), 0.0)
        return errors / errors.sum(axis=1, keepdims=True), given

    priors = post.mean(axis=0)
    errors, given = m_step(post)
    for _ in range(steps):
        log = np.log2(np.maximum(priors, eps))[None, :] + np.zeros((len(tasks), 1))
        np.add.at(log, t, np.log2(errors[w, k]))
        log -= log.max(axis=1, keepdims=True)
        post = np.exp2(log)
        post /= post.sum(axis=1, keepdims=True)
        priors = post.mean(axis=0)
        errors, given = m_step(post)
    accuracy = {
        str(workers[i]): float(
            sum(priors[j] * errors[i, j, j] for j in range(len(levels)) if given[i, j])
        )
        for i in range(len(workers))
    }
    return accuracy, pd.Series(levels[post.argmax(axis=1)], index=tasks)


@pytest.mark.parametrize("seed", range(3))
def test_dawid_skene_equals_the_em_transcribed(seed):
    ratings, _ = crowd(seed)
    labels = rm.as_labels(ratings)
    # the same number of steps on both sides (no stopping rule: tol -inf)
    got, found = rm.dawid_skene(labels, n_iter=30, tol=-np.inf)
    expected, expected_labels = dawid_skene_em(labels, 30)
    assert set(got) == set(expected)
    assert max(abs(got[r] - expected[r]) for r in got) < 1e-9
    assert (found.sort_index() == expected_labels.sort_index()).mean() > 0.99


def test_offsets_are_least_squares_and_find_the_harsh_rater():
    import statsmodels.formula.api as smf

    ratings, truth = crowd(4)
    honest = ratings[~ratings["rater"].isin(["r0", "r1", "r2"])]
    # the items two honest raters or more rated (one rating says nothing of its rater)
    honest = honest[honest.groupby("response_id")["rater"].transform("nunique") >= 2]
    offsets, corrected = rm.rater_offsets(honest)
    fitted = smf.ols("score ~ C(response_id) + C(rater)", data=honest).fit()
    # the offsets are identified up to a constant: compare differences from r3
    for rater, found in offsets.items():
        if rater == "r3":
            continue
        expected = fitted.params[f"C(rater)[T.{rater}]"]
        assert found["offset"] - offsets["r3"]["offset"] == pytest.approx(expected, abs=1e-8)
    # each rater's residual variance, over their share of the residual degrees of
    # freedom, adds up to least squares' residual sum of squares
    shared = sum(o["noise_sd"] ** 2 * o["ratings"] for o in offsets.values())
    assert shared / len(honest) * fitted.df_resid == pytest.approx(fitted.ssr, rel=1e-8)
    assert min(offsets, key=lambda r: offsets[r]["offset"]) == "r3"
    assert offsets["r3"]["offset"] < -2.3
    weights = [o["ratings"] for o in offsets.values()]
    mean_offset = np.average([o["offset"] for o in offsets.values()], weights=weights)
    assert mean_offset == pytest.approx(0, abs=1e-9)
    # the corrected scores are the least-squares item effects, on the crowd's scale
    assert len(corrected) == honest["response_id"].nunique()


def test_every_model_puts_the_spammers_last():
    ratings, _ = crowd(1)
    labels = rm.as_labels(ratings)
    spammers = {"r0", "r1", "r2"}
    for model in (rm.dawid_skene, rm.mace, rm.glad):
        reliability, found = model(labels)
        order = sorted(reliability, key=reliability.get)
        assert set(order[:3]) == spammers or set(order[:4]) >= spammers, (model.__name__, order)
        assert len(found) == labels["task"].nunique()
    offsets, _ = rm.rater_offsets(ratings)
    noisiest = sorted(offsets, key=lambda r: -offsets[r]["noise_sd"])[:3]
    assert set(noisiest) == spammers


@pytest.mark.django_db
def test_the_report_fits_them_when_asked_and_says_how_to_ask(two_meetings, researcher_client):
    """The models cost seconds per thousand ratings: the report fits them
    when the selection asks (rater_models=1, a box in the builder) and
    otherwise says how to ask; the page shows each rater's row."""
    from analysis.report.build import build_report
    from analysis.report.report_types import NotComputable
    from analysis.report.selection import Selection, SelectionError

    plain = build_report(Selection(split="test2"))
    assert isinstance(plain.rater_models, NotComputable)
    assert "tick Rater models" in plain.rater_models.reason
    with pytest.raises(SelectionError, match="rater_models 'maybe': give 1"):
        Selection.from_options({"rater_models": "maybe"})
    asked = Selection.from_options({"split": "test2", "rater_models": "1"})
    assert asked.rater_models and asked.query()["rater_models"] == "1"
    assert build_report(asked).rater_models == NotComputable.because(
        "no evaluator with individual raters in the selection"
    )
    page = researcher_client.get("/analysis/report/?split=test2")
    assert b'name="rater_models"' in page.content


@pytest.mark.django_db
def test_the_models_labels_are_evaluators_a_report_may_take_as_its_reference(
    two_meetings, researcher_client
):
    """With rater_models=1, a crowd with individual raters gives two more
    human evaluators, "crowd:offsets" and "crowd:dawid-skene": never the
    default reference, but the reference when chosen (then every judge is
    read against the offset-corrected scores), and left out of the alt-test
    as a mean of several raters. Asked for without the rater models, or as a
    judge, the selection is refused with the reason."""
    from analysis.report.build import build_report
    from analysis.report.scores import score_table
    from analysis.report.selection import Selection, SelectionError
    from analysis.statistics.ratings import individual_ratings
    from judging.models import Evaluator, Judgment

    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    crowd = Evaluator.objects.create(name="crowd", kind="crowd_human")
    rng = np.random.default_rng(0)
    Judgment.objects.bulk_create(
        Judgment(
            evaluator=crowd,
            response_id=response,
            rater=rater,
            score=float(np.clip(score, 1, 10)),
            raw_score=float(np.clip(score, 1, 10)),
            raw_scale_min=1,
            raw_scale_max=10,
        )
        for response, value in gold.items()
        for rater, score in (
            ("fair", value),
            ("harsh", value - 3),
            ("random", rng.integers(1, 11)),
        )
    )
    plain = build_report(Selection(split="test2", rater_models=True))
    aggregates = plain.rater_models.aggregates
    assert set(aggregates) == {"crowd:offsets", "crowd:dawid-skene"}
    assert aggregates["crowd:offsets"].raters == 3
    assert plain.scope.reference == "gold-human-eval"  # never an aggregate by default
    assert {"crowd:offsets", "crowd:dawid-skene"} <= set(plain.scope.humans)

    chosen = build_report(Selection(split="test2", rater_models=True, reference="crowd:offsets"))
    assert chosen.scope.reference == "crowd:offsets"
    assert "crowd:offsets" not in chosen.trust.judges
    # the offset-corrected scores, as the offset model gives them by hand
    table = score_table(Selection(split="test2"))
    _, corrected = rm.rater_offsets(individual_ratings(table)["crowd"])
    means = chosen.mean_scores
    for system in means:
        mine = table[(table["evaluator"] == "crowd") & (table["system"] == system)]
        expected = corrected.reindex(mine["response_id"].unique()).mean()
        assert means[system]["crowd:offsets"] == pytest.approx(expected)
    # the alt-test's crowd: the three raters, never the aggregates
    humans = chosen.model_dump(mode="json")["trust"]["humans"]
    assert humans["crowd"]["raters"] == 3
    for name in ("crowd:offsets", "crowd:dawid-skene"):
        assert humans[name]["raters"] == 0
        assert humans[name]["role"] == "a mean of 3 ratings per response, not one rater's"
    with pytest.raises(SelectionError, match="rater_models=1"):
        build_report(Selection(split="test2", reference="crowd:offsets"))
    with pytest.raises(SelectionError, match="select crowd itself"):
        build_report(Selection(split="test2", rater_models=True, judges=("crowd:dawid-skene",)))
    page = researcher_client.get(
        "/analysis/report/?split=test2&rater_models=1&reference=crowd:offsets"
    )
    assert page.status_code == 200
    assert b'id="aggregate-evaluators"' in page.content


def test_pairwise_verdicts_find_the_spammers_and_the_contrarian():
    """A simulated pairwise crowd (300 pairs, five of 12 raters each): eight
    careful raters (90% the true outcome), two who answer at random and one
    who answers the opposite. Every model puts the random raters and the
    contrarian below the careful ones; GLAD's alpha for the contrarian is
    negative (against the others); ties of the vote count as ties."""
    rng = np.random.default_rng(4)
    outcomes = np.array(["win", "tie", "loss"])
    opposite = {"win": "loss", "loss": "win", "tie": "tie"}
    careful = [f"c{i}" for i in range(8)]
    spammers, contrarian = ["s1", "s2"], "x"
    raters = careful + spammers + [contrarian]
    rows = []
    for pair in range(300):
        truth = rng.choice(outcomes, p=[0.45, 0.1, 0.45])
        for rater in rng.choice(raters, size=5, replace=False):
            if rater in spammers:
                said = rng.choice(outcomes)
            elif rater == contrarian:
                said = opposite[truth]
            else:
                said = truth if rng.random() < 0.9 else rng.choice(outcomes)
            rows.append(
                {"response_id": pair, "opponent_id": 1000 + pair, "rater": rater, "outcome": said}
            )
    found = rm.pairwise_reliability(pd.DataFrame(rows))
    assert found["raters"] == 11 and found["items"] == 300
    per_rater = found["per_rater"]
    for model in ("dawid_skene", "mace", "glad"):
        worst_careful = min(per_rater[r][model] for r in careful)
        assert all(per_rater[r][model] < worst_careful for r in [*spammers, contrarian]), model
    assert per_rater[contrarian]["glad"] < 0
    assert set(found["labels_differing_from_majority"]) == {"dawid_skene", "mace", "glad"}
    single = rm.pairwise_reliability(pd.DataFrame(rows[:1]))
    assert single["computable"] is False
