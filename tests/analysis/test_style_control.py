"""Bradley-Terry with style control (analysis.statistics.style_control, and
bradley_terry's `features`) against independent references on generated
battles:

- FastChat's contextual Bradley-Terry (lm-sys/FastChat,
  fastchat/serve/monitor/rating_systems.py, Apache-2.0): contextual_bt_loss_
  and_grad and fit_contextual_bt transcribed below (L-BFGS-B from zero,
  alpha = ln 10, its L2 penalty reg = 0.5), and its length feature from
  preprocess_for_style;
- statsmodels' GLM (binomial, logit link) on the same design for the
  unpenalised fit, the outcomes' ties as proportions.

The intervals' coverage is the harness's (benchmarks/coverage/
rows_bt_length.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from analysis.statistics import bradley_terry as bt
from analysis.statistics import bt_fits
from analysis.statistics import style_control as sc
from analysis.statistics.bootstrap import ClusterBootstrap

# --- FastChat's contextual Bradley-Terry, transcribed -----------------------------------------


def fastchat_loss_and_grad(params, n_competitors, matchups, features, outcomes, alpha, reg):
    half_reg = reg / 2.0
    reg_loss = half_reg * np.inner(params, params)
    ratings = params[:n_competitors]
    feature_params = params[n_competitors:]
    matchup_ratings = ratings[matchups]
    bt_logits = alpha * (matchup_ratings[:, 0] - matchup_ratings[:, 1])
    context_logits = np.dot(features, feature_params)
    probs = expit(bt_logits + context_logits)
    loss = -(np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)).sum() + reg_loss
    error = outcomes - probs
    grad = reg * params
    np.add.at(grad[:n_competitors], matchups[:, [0, 1]], (-alpha * error)[:, None] * [1.0, -1.0])
    grad[n_competitors:] -= np.dot(features.T, error)
    return loss, grad


def fastchat_fit_contextual_bt(matchups, features, outcomes, n_models, alpha, reg, tol):
    result = minimize(
        fun=fastchat_loss_and_grad,
        x0=np.zeros(n_models + features.shape[1]),
        args=(n_models, matchups, features, outcomes, alpha, reg),
        jac=True,
        method="L-BFGS-B",
        options={"disp": False, "maxiter": 100, "gtol": tol},
    )
    return result["x"]


def fastchat_length_feature(len_a, len_b):
    """preprocess_for_style for the token counts alone: the ratio with
    add_one, then centred and scaled by the standard deviation."""
    diff = (len_a - len_b).astype(float)
    total = (len_a + len_b).astype(float) + 1.0
    ratio = diff / total
    return (ratio - ratio.mean()) / ratio.std()


# --- generated battles ---------------------------------------------------------------------------


def battles(rng, k, n, weight=0.6):
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    len_a = rng.integers(50, 2000, n)
    len_b = rng.integers(50, 2000, n)
    skill = rng.normal(0, 0.8, k)
    ratio = (len_a - len_b) / (len_a + len_b + 1)
    p = expit(skill[first] - skill[second] + weight * ratio / ratio.std())
    u = rng.random(n)
    outcome = np.where(u < p, 1.0, 0.0)
    outcome[np.abs(u - p) < 0.08] = 0.5
    return first, second, outcome, len_a, len_b


@pytest.mark.parametrize("seed", range(12))
def test_equals_fastchats_contextual_fit(seed):
    """With FastChat's penalty (0.5 on its ratings and on the feature
    weights; its ratings are ours / ln 10), on 12 x (500-4,000) battles of
    3-10 systems with ties: the same ratings and length weight, FastChat
    stopping at its L-BFGS-B tolerance (1e-6 here; its gradient at our fit
    below 1e-6)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 11))
    first, second, outcome, len_a, len_b = battles(rng, k, int(rng.integers(500, 4000)))
    feature = fastchat_length_feature(len_a, len_b)[:, None]
    alpha, reg = math.log(10.0), 0.5
    theirs = fastchat_fit_contextual_bt(
        np.column_stack([first, second]), feature, outcome, k, alpha, reg, 1e-6
    )
    ours = sc.fit(first, second, outcome, feature, k, penalty=(reg / alpha**2, reg))
    # their ratings in log10-odds; with the penalty they sum to zero, as ours
    assert abs(theirs[:k].sum()) < 1e-4
    assert np.max(np.abs(ours[:k] / alpha - theirs[:k])) < 2e-5
    assert abs(ours[k] - theirs[k]) < 2e-5
    params = np.r_[ours[:k] / alpha, ours[k:]]
    _, gradient = fastchat_loss_and_grad(
        params, k, np.column_stack([first, second]), feature, outcome, alpha, reg
    )
    assert np.max(np.abs(gradient)) < 1e-6


def test_the_length_feature_is_fastchats_scaled_not_centred():
    """Concord's feature is FastChat's ratio over its root mean square, so
    which system of a battle is listed first changes nothing: flipping half
    the battles (sides, lengths and outcome) leaves the controlled ratings.
    FastChat's centred feature, whose mean depends on how the battles are
    listed, moves them."""
    rng = np.random.default_rng(4)
    k, n = 4, 3000
    first, second, outcome, len_a, len_b = battles(rng, k, n)
    len_a = len_a + 400 * (first < second)  # the first side longer on the whole
    ratio = (len_a - len_b) / (len_a + len_b + 1.0)
    ours = sc.length_feature(len_a, len_b)
    assert np.allclose(ours, ratio / np.sqrt(np.mean(ratio**2)), rtol=1e-14)
    flip = rng.random(n) < 0.5
    f2, s2 = np.where(flip, second, first), np.where(flip, first, second)
    a2, b2 = np.where(flip, len_b, len_a), np.where(flip, len_a, len_b)
    o2 = np.where(flip, 1 - outcome, outcome)
    kept = sc.fit(first, second, outcome, ours[:, None], k)
    flipped = sc.fit(f2, s2, o2, sc.length_feature(a2, b2)[:, None], k)
    assert np.max(np.abs(kept - flipped)) < 1e-9
    centred = sc.fit(first, second, outcome, fastchat_length_feature(len_a, len_b)[:, None], k)
    centred_flipped = sc.fit(f2, s2, o2, fastchat_length_feature(a2, b2)[:, None], k)
    assert np.max(np.abs(centred[:k] - centred_flipped[:k])) > 1e-3


@pytest.mark.parametrize("seed", range(6))
def test_the_mle_equals_statsmodels_glm(seed):
    sm = pytest.importorskip("statsmodels.api", reason="statsmodels is a dev dependency")
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(3, 8))
    first, second, outcome, len_a, len_b = battles(rng, k, 3000)
    feature = sc.length_feature(len_a, len_b)[:, None]
    ours = sc.fit(first, second, outcome, feature, k)
    x = sc.design(first, second, feature, k)
    glm = sm.GLM(outcome, x, family=sm.families.Binomial()).fit(tol=1e-12)
    strengths = np.r_[sc.plane(k) @ glm.params[: k - 1], glm.params[k - 1 :]]
    assert np.max(np.abs(ours - strengths)) < 1e-8


def test_without_a_length_effect_it_is_plain_bradley_terry():
    """A feature of zeros leaves the MLE of bradley_terry.fit (the win
    matrix's) to 1e-9, and the rating intervals near its own."""
    rng = np.random.default_rng(8)
    k = 4
    first, second, outcome, _, _ = battles(rng, k, 2000)
    controlled = sc.fit(first, second, outcome, np.zeros((2000, 1)), k)
    wins = bt.win_matrices(first, second, outcome, np.zeros(2000, int), k, 1).sum(axis=0)
    assert np.max(np.abs(controlled[:k] - bt.fit(wins))) < 1e-9


def test_each_resample_less_one_meeting_equals_statsmodels_weighted_glm():
    """The refits inside the resamples (each resample's battles weighted by
    how often their meeting was drawn, one copy of one meeting out) equal
    statsmodels' GLM with those frequency weights, 1e-8; a meeting the
    resample did not draw has none (NaN), and the resample's own fit equals
    the weighted GLM too."""
    sm = pytest.importorskip("statsmodels.api", reason="statsmodels is a dev dependency")
    rng = np.random.default_rng(21)
    k, n, meetings = 4, 1500, 12
    first, second, outcome, len_a, len_b = battles(rng, k, n)
    feature = sc.length_feature(len_a, len_b)[:, None]
    codes = rng.integers(0, meetings, n)
    boot = ClusterBootstrap(codes, meetings, 6, 4)
    found = sc.fits(boot, first, second, outcome, feature, codes, k)
    x = sc.design(first, second, feature, k)

    def weighted(weights):
        kept = weights > 0
        model = sm.GLM(
            outcome[kept], x[kept], family=sm.families.Binomial(), freq_weights=weights[kept]
        )
        params = model.fit(tol=1e-13).params
        return np.r_[sc.plane(k) @ params[: k - 1], params[k - 1 :]]

    checked = 0
    for r, counts in enumerate(found.counts):
        resample = counts[codes].astype(float)
        assert np.max(np.abs(found.resampled[r] - weighted(resample))) < 1e-8
        for c in range(meetings):
            if counts[c] == 0:
                assert np.isnan(found.resampled_leave_one_out[r, c]).all()
                continue
            less = resample - (codes == c)
            assert np.max(np.abs(found.resampled_leave_one_out[r, c] - weighted(less))) < 1e-8
            checked += 1
    assert checked > 40


def test_the_jackknife_refits_up_to_60_meetings_and_steps_beyond():
    """The fits less one meeting: up to 60 meetings, refits (equal to
    refitting without the meeting by hand, 1e-8); the infinitesimal jackknife
    beyond, whose standard errors on 20 meetings come within 6% of the
    refits' (5% smaller here, why it is not used there)."""
    rng = np.random.default_rng(9)
    k, n, meetings = 4, 3000, 20
    first, second, outcome, len_a, len_b = battles(rng, k, n)
    feature = sc.length_feature(len_a, len_b)[:, None]
    codes = rng.integers(0, meetings, n)
    boot = ClusterBootstrap(codes, meetings, 10, 1)
    found = sc.fits(boot, first, second, outcome, feature, codes, k)
    exact = np.array(
        [
            sc.fit(
                first[codes != c], second[codes != c], outcome[codes != c], feature[codes != c], k
            )
            for c in range(meetings)
        ]
    )
    assert np.max(np.abs(found.leave_one_out - exact)) < 1e-8
    drawn = found.counts > 0
    assert np.isfinite(found.resampled_leave_one_out[drawn]).all()
    assert np.isnan(found.resampled_leave_one_out[~drawn]).all()
    x = sc.design(first, second, feature, k)
    data = sc.newton(x, outcome, np.ones((1, n)))
    linear = sc.to_strengths(sc._leave_one_out(x, outcome, np.ones((1, n)), data, codes, 20)[0], k)
    slots = np.ones(meetings)
    stepped = np.sqrt(np.diag(bt_fits.jackknife_covariance(linear, slots)))
    refitted = np.sqrt(np.diag(bt_fits.jackknife_covariance(exact, slots)))
    assert np.max(np.abs(stepped / refitted - 1)) < 0.06


def test_bradley_terry_with_length_control_recovers_the_ratings_and_weight():
    """Battles whose longer answer wins more often (weight 0.6 per unit of
    the scaled feature): the controlled fit finds the weight inside its
    interval and the systems' ratings without the length's pull (each inside
    its interval, within 30 Elo points), where the plain fit over-rates the
    long-winded system."""
    rng = np.random.default_rng(12)
    k, n, meetings = 4, 6000, 30
    first, second, _, len_a, len_b = battles(rng, k, n)
    skill = np.array([0.6, 0.2, -0.2, -0.6])
    # system 3 writes the longest answers: plain Bradley-Terry credits it
    len_a = len_a + 1500 * (first == 3)
    len_b = len_b + 1500 * (second == 3)
    feature = sc.length_feature(len_a, len_b)
    p = expit(skill[first] - skill[second] + 0.6 * feature)
    outcome = (rng.random(n) < p).astype(float)
    codes = rng.integers(0, meetings, n)
    boot = ClusterBootstrap(codes, meetings, 400, 2)
    names = ["a", "b", "c", "d"]
    controlled = bt.bradley_terry(
        first,
        second,
        outcome,
        codes,
        names,
        boot,
        features=feature[:, None],
        feature_names=["length"],
    )
    plain = bt.bradley_terry(first, second, outcome, codes, names, boot)
    (weight,) = controlled["covariates"]
    assert weight["name"] == "length" and abs(weight["weight"] - 0.6) < 0.1
    # 30 meetings: intervals (from 10 on, the harness finds them holding)
    assert "ci_note" not in controlled
    assert weight["ci95"][0] < 0.6 < weight["ci95"][1]
    rating = {s["system"]: s for s in controlled["systems"]}
    plain_rating = {s["system"]: s for s in plain["systems"]}
    truth = 1000 + 400 / math.log(10) * (skill - skill.mean())
    for i, name in enumerate(names):
        assert abs(rating[name]["rating"] - truth[i]) < 30
        assert rating[name]["ci95"][0] < truth[i] < rating[name]["ci95"][1]
    # the long-winded system is over-rated without the control
    assert plain_rating["d"]["rating"] > truth[3] + 50
    assert controlled["method"] == bt.METHOD_CONTROLLED


def test_the_controlled_intervals_are_the_studentized_ones_widened_by_t_over_the_normal():
    """The controlled ratings', differences' and weight's intervals are the
    plain construction's (estimate plus or minus the max-t multiplier times
    the jackknife standard error), built here from the fits, times Student's
    t on meetings - 1 over the normal's 97.5% point (1.068 at 20 meetings)."""
    from scipy import stats

    rng = np.random.default_rng(5)
    k, n, meetings = 4, 3000, 20
    first, second, _, len_a, len_b = battles(rng, k, n)
    feature = sc.length_feature(len_a, len_b)
    skill = np.array([0.5, 0.1, -0.1, -0.5])
    outcome = (rng.random(n) < expit(skill[first] - skill[second] + 0.4 * feature)).astype(float)
    codes = rng.integers(0, meetings, n)
    boot = ClusterBootstrap(codes, meetings, 400, 3)
    found = bt.bradley_terry(
        first, second, outcome, codes, list("abcd"), boot, features=feature[:, None]
    )
    factor = stats.t.ppf(0.975, meetings - 1) / stats.norm.ppf(0.975)
    assert bt.controlled_widening(meetings) == pytest.approx(factor) == pytest.approx(1.0679, 1e-4)
    fits = sc.fits(boot, first, second, outcome, feature[:, None], codes, k)
    unit = np.hstack([np.eye(k), np.zeros((k, 1))])
    estimate, se, t = bt.contrast_t(fits, unit)
    q = bt.multipliers(t, meetings, simultaneous=True)
    for system in found["systems"]:
        s = "abcd".index(system["system"])
        half = (system["ci95"][1] - system["ci95"][0]) / 2
        assert half == pytest.approx(bt.ELO_PER_UNIT * factor * q[s] * se[s], rel=1e-9)
    _, _, weights = bt.pairs(k)
    _, d_se, d_t = bt.contrast_t(fits, np.hstack([weights, np.zeros((len(weights), 1))]))
    d_q = bt.multipliers(d_t, meetings, simultaneous=True)
    for d, difference in enumerate(found["differences"]):
        half = (difference["ci95"][1] - difference["ci95"][0]) / 2
        assert half == pytest.approx(bt.ELO_PER_UNIT * factor * d_q[d] * d_se[d], rel=1e-9)
    _, w_se, w_t = bt.contrast_t(fits, np.eye(k + 1)[k:])
    w_q = bt.multipliers(w_t, meetings, simultaneous=False)
    (length,) = found["covariates"]
    assert (length["ci95"][1] - length["ci95"][0]) / 2 == pytest.approx(
        factor * w_q[0] * w_se[0], rel=1e-9
    )


# --- FastChat's markdown elements, transcribed ----------------------------------------------------


def fastchat_count_markdown_elements(markdown_text, suffix):
    """fastchat/serve/monitor/add_markdown_info.py, count_markdown_elements."""
    import re

    return {
        f"header_count{suffix}": {
            "h1": len(re.findall(r"^#{1}\s", markdown_text, re.MULTILINE)),
            "h2": len(re.findall(r"^#{2}\s", markdown_text, re.MULTILINE)),
            "h3": len(re.findall(r"^#{3}\s", markdown_text, re.MULTILINE)),
            "h4": len(re.findall(r"^#{4}\s", markdown_text, re.MULTILINE)),
            "h5": len(re.findall(r"^#{5}\s", markdown_text, re.MULTILINE)),
            "h6": len(re.findall(r"^#{6}\s", markdown_text, re.MULTILINE)),
        },
        f"list_count{suffix}": {
            "ordered": len(re.findall(r"^\s*\d+\.\s", markdown_text, re.MULTILINE)),
            "unordered": len(re.findall(r"^\s*[-*+]\s", markdown_text, re.MULTILINE)),
        },
        f"bold_count{suffix}": {
            "**": len(re.findall(r"\*\*[^*\n]+\*\*", markdown_text)),
            "__": len(re.findall(r"__[^_\n]+__", markdown_text)),
        },
    }


def fastchat_remove_pattern(answer, pattern):
    """add_markdown_info.py, remove_pattern (each code block's text removed)."""
    for block in pattern.findall(answer):
        answer = answer.replace(block, "")
    return answer


def fastchat_counts(text):
    """get_element_counts for one answer, then preprocess_for_style's
    extract_style_feature (the sum of each element's counts)."""
    import re

    found = fastchat_count_markdown_elements(
        fastchat_remove_pattern(text, re.compile("```([^`]*)```")), "_a"
    )
    return tuple(sum(found[f"{name}_count_a"].values()) for name in ("header", "list", "bold"))


MARKDOWN_PIECES = [
    "# ", "## ", "###### ", "####### ", "#no space", "1. ", "12. ", " 3. ", "- ", "* ", "+ ",
    "  - ", "**", "__", "*", "_", "```", "`", "\n", "\n", "\n", " ", "word ", "Speaker A ",
    "12", ".", "ä", "\t", "**bold**", "__under__", "```\n# in code\n- item\n```",
]  # fmt: skip


def test_markdown_counts_equal_fastchats_on_generated_answers():
    """3,000 answers stitched from markdown's pieces (headers of every level,
    list markers, bold with both marks, code blocks, stray marks, Unicode):
    headers, list items and bold spans as FastChat counts them, 0 differences."""
    rng = np.random.default_rng(21)
    differences = 0
    for _ in range(3000):
        pieces = rng.choice(len(MARKDOWN_PIECES), int(rng.integers(0, 40)))
        text = "".join(MARKDOWN_PIECES[i] for i in pieces)
        differences += sc.markdown_counts(text) != fastchat_counts(text)
    assert differences == 0
    assert sc.markdown_counts("# A\n- b\n- c\n**d**") == (1, 2, 1)


def test_style_controlled_ranking_recovers_skills_when_lists_win():
    """Scores drawn so that the contextual model holds exactly: each answer's
    latent score is its system's skill, plus 0.8 if it has a list, plus
    Gumbel noise (the difference of two Gumbels is logistic, and with lists 0
    or 1 the list feature (a - b) / (a + b + 1) is (a - b) / 2). System S0
    writes lists 90% of the time, the others 20%. Holding length and lists
    fixed finds the skills (within 25 Elo) and the lists' weight, where
    length alone over-rates S0; an element no battle differs in (headers
    here) is left out."""
    import pandas as pd

    from analysis.report.rankings import from_scores

    rng = np.random.default_rng(5)
    k, questions, per_meeting = 4, 1500, 50
    skill = np.array([-0.3, 0.5, 0.1, -0.3])
    lists = (rng.random((questions, k)) < np.where(np.arange(k) == 0, 0.9, 0.2)).astype(int)
    latent = skill + 0.8 * lists + rng.gumbel(size=(questions, k))
    chars = rng.integers(200, 800, (questions, k))
    rs = pd.DataFrame(
        {
            "response_id": np.arange(questions * k),
            "evaluator": "judge",
            "system": np.tile([f"S{s}" for s in range(k)], questions),
            "question_pk": np.repeat(np.arange(questions), k),
            "mode": "m",
            "dataset_version": "v",
            "meeting": np.repeat([f"M{q // per_meeting:02d}" for q in range(questions)], k),
            "score": latent.ravel(),
            "response_chars": chars.ravel(),
        }
    )
    markdown = pd.DataFrame(
        {"headers": 0, "lists": lists.ravel(), "bold": rng.poisson(0.5, questions * k)},
        index=pd.Index(rs["response_id"], name="response_id"),
    )
    styled = from_scores(rs, 50, 1, True, markdown)["judge"]
    length = from_scores(rs, 50, 1, True)["judge"]
    names = [c["name"] for c in styled["covariates"]]
    assert names == ["length", "lists", "bold"] and styled["covariates_left_out"] == ["headers"]
    weights = {c["name"]: c["weight"] for c in styled["covariates"]}
    # the feature is (a - b) / 2 over its root mean square: 0.8 per unit of a - b
    first, second = np.triu_indices(k, 1)
    rms = np.sqrt(np.mean(((lists[:, first] - lists[:, second]) / 2.0) ** 2))
    assert abs(weights["lists"] - 0.8 * 2 * rms) < 0.15 and abs(weights["bold"]) < 0.1
    styled_rating = {s["system"]: s["rating"] for s in styled["systems"]}
    length_rating = {s["system"]: s["rating"] for s in length["systems"]}
    truth = 1000 + 400 / math.log(10) * (skill - skill.mean())
    for s in range(k):
        assert abs(styled_rating[f"S{s}"] - truth[s]) < 25
    assert length_rating["S0"] > truth[0] + 60


@pytest.mark.django_db
def test_the_report_gives_length_controlled_intervals_from_ten_meetings(tmp_path):
    """16 meetings (the synthetic archive, its scores scattered so that no
    system wins every comparison, one system's answers written as lists):
    the length-controlled rankings come with their intervals, rank-sets and
    the length weight's interval, on the page too; style control beyond the
    length (here the lists) gives none (the harness replays the length
    only), and says why."""
    from analysis.report.build import build_report
    from analysis.report.render import to_html
    from analysis.report.selection import Selection
    from corpus.importers.synthetic import write_synthetic_elitr
    from generation.models import Response
    from judging.importing import import_elitr_bench
    from judging.models import Judgment

    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "data", meetings=16, seed=3), with_responses=True
    )
    rng = np.random.default_rng(4)
    judgments = list(Judgment.objects.all())
    for judgment in judgments:
        judgment.score = float(np.clip(round(judgment.score + 3 * rng.normal()), 1, 10))
    Judgment.objects.bulk_update(judgments, ["score"])
    lister = Response.objects.first().run.system.name
    listed = list(Response.objects.filter(run__system__name=lister))
    for response in listed:
        response.text = "- " + response.text.replace(". ", ".\n- ")
    Response.objects.bulk_update(listed, ["text"])
    selection = Selection(
        dataset_version="qa", split="test2", mode="st", length_control=True, style_control=True
    )
    report = build_report(selection)
    rankings = report.model_dump(mode="json", by_alias=True)["rankings"]
    gold = rankings["length_controlled"]["gold-human-eval"]
    assert gold["clusters"] == 16 and gold.get("ci_note") is None, gold["ci_note"]
    for system in gold["systems"]:
        low, high = system["ci95"]
        assert low < system["rating"] < high
        assert 1 <= system["rank_set"][0] <= system["rank"] <= system["rank_set"][1]
    (length,) = gold["covariates"]
    assert length["ci95"][0] < length["weight"] < length["ci95"][1]
    page = to_html(report)
    section = page[page.index('id="length-controlled"') : page.index('id="style-controlled"')]
    low, high = gold["systems"][0]["ci95"]
    assert f"[{low:.0f}, {high:.0f}]" in section
    styled = rankings["style_controlled"]["gold-human-eval"]
    assert "lists" in [c["name"] for c in styled["covariates"]]
    assert styled["ci_note"] == bt.STYLE_BEYOND_LENGTH_NOTE
    assert all(s["ci95"] == [None, None] for s in styled["systems"])
