"""The report as typed models: JSON -> model -> JSON gives back the same text,
every part of the JSON has its type, and a missing, misspelt or mistyped field
is an error where the report is built or read, never an empty cell."""

import json

import pytest
from django.test import override_settings
from pydantic import ValidationError

from analysis.report.build import build_report
from analysis.report.render import to_html, to_latex
from analysis.report.report_types import (
    AgreementReport,
    Correlation,
    Counts,
    IccForm,
    JudgePanel,
    MeanInterval,
    NotComputable,
    OverallIcc,
    PanelWeights,
    PositionBias,
    PositionBiasOneOrder,
    SeedSummary,
)
from analysis.report.selection import Selection
from corpus.importers.synthetic import write_synthetic_elitr
from generation.models import GenerationRun, Response
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment, PairwiseVerdict
from tests.conftest import rolled_back_once

pytestmark = [
    pytest.mark.django_db,
    # scipy's t-tests on the fixture's near-constant seeded scores say so; harmless here
    pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning"),
]

PANEL, JUDGE, ONE_ORDER, CROWD = "expert-panel", "battle judge", "one-order judge", "crowd (pilot)"
TOP_LEVEL = [
    "schema_version",
    "stamp",
    "scope",
    "counts",
    "trust",
    "evaluators",
    "systems",
    "mean_scores",
    "mean_scores_n",
    "settings",
    "seeds",
    "correlations",
    "correlation_details",
    "system_correlations",
    "rater_agreement",
    "gold_bins",
    "breakdown",
    "middle_position_welch",
    "qa_conv_differentiating",
    "diagnostics",
    "ppi",
    "planner",
    "score_distributions",
    "rankings",
    "rater_models",
    "panels",
    "deferral",
    "self_preference",
    "probes",
]


def judged(evaluator, response, score, rater=""):
    return Judgment(
        evaluator=evaluator,
        response=response,
        rater=rater,
        score=score,
        raw_score=score,
        raw_scale_min=1,
        raw_scale_max=10,
    )


@pytest.fixture(scope="class")
def every_part_once(django_db_setup, django_db_blocker, tmp_path_factory):
    """conftest's two_meetings and build_every_part's additions, and the report
    on them, built once for the class of tests that read that report (about
    1.5 s each time), in a transaction rolled back after them."""
    with rolled_back_once(django_db_blocker):
        import_elitr_bench(
            write_synthetic_elitr(tmp_path_factory.mktemp("data"), meetings=2), with_responses=True
        )
        yield build_every_part()


@pytest.fixture
def every_part(every_part_once, db):
    """The class's report (its tests only read it), with its data in this
    test's own transaction."""
    return every_part_once


def build_every_part():
    """The synthetic data plus what makes every part of the report computable
    in each of its shapes: individual raters (one who skipped an item, so the
    overall ICC is unbalanced), seeded runs (one with a single seed), and
    pairwise verdicts of a judge in both orders, a judge in one order only and
    a crowd study."""
    responses = list(
        Response.objects.filter(
            run__dataset__version="qa", run__dataset__split="test2", run__mode="st"
        )
        .select_related("run__system", "question__document")
        .order_by("pk")
    )
    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    panel = Evaluator.objects.create(name=PANEL, kind="imported", origin="ratings_file")
    ratings = []
    for index, response in enumerate(responses):
        first_meeting = response.question.document.external_id.endswith("1")
        raters = ("a", "b", "c") if first_meeting else ("d", "e", "f")
        for offset, rater in enumerate(raters):
            if rater == "f" and index % 5 == 0:
                continue  # f skipped some items
            ratings.append(
                judged(
                    panel,
                    response,
                    min(10, max(1, gold[response.pk] + (index + offset) % 3 - 1)),
                    rater,
                )
            )
    Judgment.objects.bulk_create(ratings)

    gpt4 = Evaluator.objects.get(name="gpt-4-eval")
    gold_evaluator = Evaluator.objects.get(name="gold-human-eval")
    seeded = []
    for system, seeds in (("Synthetic-Echo", (1, 2)), ("Synthetic-Terse", (5,))):
        source = next(r.run for r in responses if r.run.system.name == system)
        for seed in seeds:
            run = GenerationRun.objects.create(
                system=source.system, dataset=source.dataset, mode="st", seed=seed
            )
            for response in source.responses.order_by("pk"):
                copy = Response.objects.create(run=run, question=response.question, text="x" * seed)
                seeded.append(judged(gpt4, copy, 1 + (response.pk + seed) % 10))
                # gold on every judged response: PPI may sample its labelled set
                seeded.append(judged(gold_evaluator, copy, gold[response.pk]))
    Judgment.objects.bulk_create(seeded)

    judge = Evaluator.objects.create(name=JUDGE, kind="llm_pairwise")
    one_order = Evaluator.objects.create(name=ONE_ORDER, kind="llm_pairwise")
    crowd = Evaluator.objects.create(name=CROWD, kind="crowd_human")
    baseline = {r.question_id: r for r in responses if r.run.system.name == "Synthetic-Hedge"}
    winners = ("first", "second", "tie")
    verdicts = []
    for index, response in enumerate(
        r for r in responses if r.run.system.name != "Synthetic-Hedge"
    ):
        opponent = baseline[response.question_id]
        pair = {"response": response, "opponent": opponent}
        for order in (0, 1):
            verdicts.append(
                PairwiseVerdict(
                    evaluator=judge,
                    seed=1,
                    order=order,
                    winner=winners[(index + order) % 3],
                    **pair,
                )
            )
        verdicts.append(
            PairwiseVerdict(evaluator=one_order, seed=1, order=0, winner=winners[index % 2], **pair)
        )
        for number, rater in enumerate(("p1", "p2", "p3")):
            verdicts.append(
                PairwiseVerdict(
                    evaluator=crowd,
                    seed=0,
                    order=(index + number) % 2,
                    rater=rater,
                    winner=winners[(index * number) % 3],
                    **pair,
                )
            )
    PairwiseVerdict.objects.bulk_create(verdicts)
    # judge panels: a learned one (weights shown) and one a member of which has no score
    for name, members, rule in (
        ("judge-panel", ["gpt-4-eval", "prometheus-eval"], "learned"),
        ("broken-panel", ["gpt-4-eval", JUDGE], "mean"),
    ):
        Evaluator.objects.create(name=name, kind="panel", config={"members": members, "rule": rule})
    return build_report(Selection(dataset_version="qa", rater_models=True), bootstrap=20)


def without(data: dict, *path: str) -> dict:
    data = json.loads(json.dumps(data))
    *parents, last = path
    node = data
    for key in parents:
        node = node[key]
    del node[last]
    return data


class TestEveryPart:
    """One report with every part computable, built once: these tests only
    read it."""

    def test_every_part_has_its_type(self, every_part):
        report = every_part
        assert report.evaluators == [
            PANEL,
            "gold-human-eval",
            "gpt-4-eval",
            "judge-panel",
            "prometheus-eval",
            "silver-human-eval",
        ]
        # a judge panel: computed with its weights, or the reason it is not
        learned = report.panels["judge-panel"]
        assert isinstance(learned, JudgePanel) and isinstance(learned.weights, PanelWeights)
        assert learned.weights.learned_from == "gold-human-eval"
        assert report.panels["broken-panel"] == NotComputable.because(
            f"broken-panel: no score in this selection from {JUDGE}"
        )
        # the learned panel would defer by its members' spread, but two meetings are
        # too few for a guarantee by meeting (the type of a deferring judge:
        # test_deferral_report, on 16 meetings)
        assert report.deferral["judge-panel"].computable is False
        assert "needs 7 or more there" in report.deferral["judge-panel"].reason
        correlation = report.correlation_details.pearson["gpt-4-eval"]["gold-human-eval"]
        assert isinstance(correlation, Correlation)
        assert correlation.ci_method == "Fisher z" and correlation.bootstrap_resamples == 20
        panel_n = report.correlation_details.pearson[PANEL]["gold-human-eval"].n
        assert report.correlation_details.pearson[PANEL][PANEL] == Correlation(r=1.0, n=panel_n)
        panel = report.rater_agreement[PANEL]
        assert isinstance(panel.overall, OverallIcc) and panel.overall.raters_per_item == [2, 3]
        assert all(
            isinstance(form, IccForm) and form.description is None for form in panel.overall.forms
        )
        meetings = list(panel.per_meeting.values())
        assert any("left out 1 rater(s)" in m.method for m in meetings)
        assert isinstance(report.rater_agreement["gpt-4-eval"], NotComputable)
        seeds = report.seeds["gpt-4-eval"]
        assert seeds["Synthetic-Echo"]["st/qa/test2"].seeds == [1, 2]
        assert seeds["Synthetic-Terse"]["st/qa/test2"] == SeedSummary(
            seeds=[5],
            mean=seeds["Synthetic-Terse"]["st/qa/test2"].mean,
            std=None,
            note="one seed: no standard deviation",
        )
        bins = report.gold_bins.bins
        cells = [cell for entry in bins.values() for cell in entry.evaluators.values()]
        assert any(isinstance(cell, MeanInterval) for cell in cells)
        assert any(isinstance(cell, NotComputable) for cell in cells)
        pairwise = report.diagnostics.pairwise
        assert isinstance(pairwise[JUDGE], PositionBias)
        assert isinstance(pairwise[ONE_ORDER], PositionBiasOneOrder)
        assert pairwise[ONE_ORDER].flip_rate == NotComputable.because(
            "no pair was judged in both orders"
        )
        study = report.diagnostics.human_pairwise[CROWD]
        assert set(study.agreement_with_judges) == {JUDGE, ONE_ORDER}
        assert study.inter_rater.pairs == 24  # 2 systems x 12 questions against the baseline
        # position bias: the pairwise judges beside the human study, from the same verdicts
        bias = report.trust.position_bias
        assert bias[JUDGE].kind == "LLM judge" and bias[CROWD].kind == "human study"
        assert bias[JUDGE].first_position_win_rate == pairwise[JUDGE].first_position_win_rate
        assert bias[JUDGE].flip_rate == pairwise[JUDGE].flip_rate
        effect = study.position_effect
        assert bias[CROWD].first_position_win_rate == effect.first_position_win_rate
        assert bias[CROWD].ci95 == effect.binomial_test.ci95
        assert bias[ONE_ORDER].flip_rate is None
        # the pairwise evaluators are ranked from their verdicts too, beside the scores
        assert set(report.rankings.from_verdicts) == {JUDGE, ONE_ORDER, CROWD}
        assert set(report.rankings.from_scores) == set(report.evaluators)
        # the panel's six raters, each with every model's reliability
        panel = report.rater_models.evaluators[PANEL]
        assert set(panel.per_rater) == set("abcdef")
        assert panel.per_rater["f"].ratings < panel.per_rater["e"].ratings
        assert set(panel.labels_differing_from_mean) == {"dawid_skene", "mace", "glad", "offsets"}
        # the pairwise crowd's three raters, on their verdicts
        crowd = report.rater_models.pairwise[CROWD]
        assert set(crowd.per_rater) == {"p1", "p2", "p3"} and crowd.raters == 3
        assert all(r.verdicts == crowd.items for r in crowd.per_rater.values())

    def test_json_model_json_gives_the_same_text(self, every_part):
        text = every_part.to_json()
        again = AgreementReport.from_json(text)
        assert again == every_part
        assert again.to_json() == text
        data = json.loads(text)
        assert list(data) == TOP_LEVEL
        # a field the layout leaves out stays out; one that is null stays null
        diagonal = data["correlation_details"]["pearson"][PANEL][PANEL]
        assert list(diagonal) == ["r", "n"]
        one_order = data["diagnostics"]["pairwise"][ONE_ORDER]
        assert list(one_order) == ["first_position_win_rate", "flip_rate"]
        terse = data["seeds"]["gpt-4-eval"]["Synthetic-Terse"]["st/qa/test2"]
        assert terse["std"] is None and "note" in terse
        assert "note" not in data["seeds"]["gpt-4-eval"]["Synthetic-Echo"]["st/qa/test2"]
        assert "description" not in data["rater_agreement"][PANEL]["overall"]["forms"][0]
        # ICC degrees of freedom keep their JSON number type (int, or float when unbalanced)
        assert isinstance(data["rater_agreement"][PANEL]["overall"]["forms"][0]["df1"], int)
        assert isinstance(data["rater_agreement"][PANEL]["overall"]["forms"][0]["df2"], float)

    @pytest.mark.parametrize(
        ("path", "where"),
        [
            (("stamp", "data_sha256"), "stamp.data_sha256"),
            (("mean_scores_n",), "a report on judgments has mean_scores_n"),
            (("counts", "raters"), "lack raters"),
            (("breakdown", "answer_position"), "breakdown.computed.answer_position"),
            (
                ("correlation_details", "pearson", "gpt-4-eval", "gold-human-eval", "n"),
                "correlation_details.computed.pearson.gpt-4-eval.gold-human-eval.computed.n",
            ),
            (
                ("diagnostics", "human_pairwise", CROWD, "position_effect", "tie_rate"),
                "position_effect.computed.tie_rate",
            ),
            (("gold_bins", "bins", "3", "n"), "gold_bins.computed.bins.3.n"),
        ],
    )
    def test_a_missing_field_is_an_error_when_read(self, every_part, path, where):
        data = every_part.to_dict()
        with pytest.raises(ValidationError) as error:
            AgreementReport.from_dict(without(data, *path))
        assert where in str(error.value)

    def test_a_misspelt_or_mistyped_field_is_an_error(self, every_part):
        data = every_part.to_dict()
        data["mean_score"] = data.pop("mean_scores")
        with pytest.raises(ValidationError, match="mean_score\n  Extra inputs are not permitted"):
            AgreementReport.from_dict(data)
        with pytest.raises(AttributeError):
            every_part.mean_score  # noqa: B018
        with pytest.raises(ValidationError, match="Field required"):
            Correlation(r=0.5, p=0.01)  # no n
        with pytest.raises(ValidationError, match="valid number"):
            Correlation(r="0.5", n=3)  # strict: a string is not a number
        with pytest.raises(ValidationError, match="valid integer"):
            Counts(judgments=True)
        with pytest.raises(ValidationError, match="lack responses, evaluators, systems, raters"):
            Counts(judgments=12)
        with pytest.raises(ValidationError, match="frozen"):
            every_part.counts.judgments = 0

    def test_a_stored_report_of_another_schema_version_is_refused(self, every_part):
        data = every_part.to_dict() | {"schema_version": 1}  # before the judge-trust section
        with pytest.raises(ValidationError, match="schema_version"):
            AgreementReport.from_dict(data)

    @override_settings(
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "APP_DIRS": True,
                "OPTIONS": {"string_if_invalid": "INVALID[%s]"},
            }
        ]
    )
    def test_the_html_reads_only_attributes_the_report_has(self, every_part):
        """Django templates print nothing for a misspelt name; here they print it."""
        html = to_html(every_part)
        assert "INVALID[" not in html
        assert f"{CROWD} · {JUDGE}" in html and "left out 1 rater(s)" in html
        latex = to_latex(every_part)
        assert r"\begin{tabular}" in latex and "Judge trust against" in latex and "PPI++" in latex
        assert 'alt="reliability plot"' in html and 'alt="PPI system scores"' in html
        empty = to_html(build_report(Selection(split="test2", mode="mt")))
        assert "INVALID[" not in empty and "empty selection: no judgment matches it" in empty


def test_an_empty_report_round_trips_in_its_own_order(two_meetings):
    report = build_report(Selection(split="test2", mode="mt"))
    text = report.to_json()
    assert AgreementReport.from_json(text).to_json() == text
    data = json.loads(text)
    assert list(data)[:6] == [
        "schema_version",
        "stamp",
        "scope",
        "counts",
        "trust",
        "mean_scores",
    ]
    # the parts an empty report has always had, in their order; then the newer ones
    assert list(data)[-6:] == [
        "correlation_details",
        "evaluators",
        "systems",
        "score_distributions",
        "rankings",
        "rater_models",
    ]
    assert data["counts"] == {"judgments": 0}
    assert "mean_scores_n" not in data
    assert report.diagnostics == NotComputable.because("empty selection: no judgment matches it")


def test_latex_escapes_every_character_tex_reads_as_markup():
    """Names come from researchers and imported files: none may become TeX
    commands. ^^5c is TeX's notation for a backslash (so ^^5cinput^^7b...^^7d
    would read a file), and a backslash's own escape keeps its braces."""
    from analysis.report.render import _latex_escape

    assert _latex_escape("^^5cinput^^7b/etc/passwd^^7d") == (
        r"\textasciicircum{}\textasciicircum{}5cinput\textasciicircum{}\textasciicircum{}7b"
        r"/etc/passwd\textasciicircum{}\textasciicircum{}7d"
    )
    assert _latex_escape("a\\b {x} ~ 50% _#$&") == (
        r"a\textbackslash{}b \{x\} \textasciitilde{} 50\% \_\#\$\&"
    )
