"""A judge panel made from the console, in Chromium, by a researcher of a
project that is not the default one (and a viewer of the default): he ticks
two judges, chooses the learned rule, saves, and opens the report with the
panel beside its members, where the panel is a judge with its weights shown.
A viewer sees no "New panel" button and the form answers him 403; a panel of
one member, or of a person, is refused on its field and nothing is stored."""

from __future__ import annotations

import re

import pytest

from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from generation.models import GenerationRun
from judging.importing import import_elitr_bench
from judging.models import Evaluator
from tests.browsing import sign_in
from users.models import Membership, Project, User, default_project

pytestmark = pytest.mark.browser


@pytest.fixture
def team_data(transactional_db, tmp_path):
    """Synthetic ELITR data (its judges and human scores) in team-b's project,
    and Rita: researcher of team-b, viewer of the default project."""
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=3), with_responses=True)
    team = Project.objects.create(name="team-b", slug="team-b")
    GenerationRun.objects.update(project=team)
    rita = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    Membership.objects.filter(user=rita).delete()
    Membership.objects.create(user=rita, project=team, role="researcher")
    Membership.objects.create(user=rita, project=default_project(), role="viewer")
    return team


def test_a_researcher_of_a_second_project_makes_a_panel_and_reads_it_in_the_report(
    browser, live_server, team_data
):
    page = sign_in(browser, live_server, path="/console/")
    page.click("nav a:has-text('Judges')")
    page.click("#new-panel")
    # a panel of one judge is refused on its field, and nothing is stored
    page.fill("#id_name", "gpt-4 alone")
    page.check("input[name=members][value='gpt-4-eval']")
    page.click("#submit")
    page.wait_for_selector("#field-members .errorlist")
    assert "at least two" in page.inner_text("#field-members .errorlist")
    assert not Evaluator.objects.filter(name="gpt-4 alone").exists()
    # people are no members: the form does not offer them
    assert page.locator("input[name=members][value='gold-human-eval']").count() == 0

    page.fill("#id_name", "gpt4+prometheus")
    page.check("input[name=members][value='prometheus-eval']")
    page.check("input[name=rule][value='learned']")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/panels/\d+/$"))
    panel = Evaluator.objects.get(name="gpt4+prometheus")
    assert panel.kind == "panel" and panel.project == team_data
    assert panel.config == {
        "members": ["gpt-4-eval", "prometheus-eval"],
        "rule": "learned",
        "pairwise": False,
    }
    assert page.inner_text("#panel-rule") == "learned"

    page.click("#panel-report")
    page.wait_for_selector("#panels")
    section = page.inner_text("#panel-gpt4prometheus")
    assert section == "gpt4+prometheus"
    body = page.inner_text("body")
    part = body[body.index("Judge panels") :]
    assert "Members: gpt-4-eval, prometheus-eval. Rule: learned" in part
    assert "cross-fitted over 3 folds of whole meetings" in part
    assert "not recorded for every member" in part  # imported scores: no cost
    # the panel is a judge of the report, beside its members
    assert "judges gpt-4-eval, gpt4+prometheus, prometheus-eval;" in body


def pairwise_judges(project: Project) -> list[str]:
    """Two pairwise judges of `project`, each with a verdict in both orders on
    every test2 answer of one system against another's to the same question."""
    from generation.models import Response
    from judging.models import PairwiseVerdict

    responses = Response.objects.filter(
        run__dataset__split="test2", run__mode="st", run__dataset__version="qa"
    ).select_related("run__system")
    systems = sorted({r.run.system.name for r in responses})
    by_question: dict[tuple[str, int], Response] = {
        (r.run.system.name, r.question_id): r for r in responses
    }
    names = ["battle-judge-a", "battle-judge-b"]
    rows = []
    for index, name in enumerate(names):
        judge = Evaluator.objects.create(name=name, kind="llm_pairwise", project=project)
        for (system, question), response in by_question.items():
            opponent = by_question.get((systems[0], question))
            if system == systems[0] or opponent is None:
                continue
            for order in (0, 1):
                winner = ("first", "second")[(order + index + question) % 2]
                rows.append(
                    PairwiseVerdict(
                        evaluator=judge,
                        response=response,
                        opponent=opponent,
                        seed=1,
                        order=order,
                        winner=winner,
                    )
                )
    PairwiseVerdict.objects.bulk_create(rows)
    return names


def crowd_study(project: Project) -> str:
    """A crowd pairwise study of `project` on the pairs the judges judged: three
    raters per pair, each seeing one order, the judged answer winning twice."""
    from judging.models import PairwiseVerdict

    crowd = Evaluator.objects.create(name="crowd pairs", kind="crowd_human", project=project)
    pairs = {
        (v.response_id, v.opponent_id)
        for v in PairwiseVerdict.objects.filter(evaluator__name="battle-judge-a")
    }
    rows = []
    for response, opponent in sorted(pairs):
        for rater, (order, winner) in enumerate([(0, "first"), (1, "second"), (0, "second")]):
            rows.append(
                PairwiseVerdict(
                    evaluator=crowd,
                    response_id=response,
                    opponent_id=opponent,
                    seed=0,
                    order=order,
                    winner=winner,
                    rater=f"p{rater}",
                )
            )
    PairwiseVerdict.objects.bulk_create(rows)
    return crowd.name


def test_a_researcher_makes_a_panel_of_pairwise_judges(browser, live_server, team_data):
    judges = pairwise_judges(team_data)
    crowd = crowd_study(team_data)
    page = sign_in(browser, live_server, path="/console/judges/panels/new/")
    page.fill("#id_name", "two battle judges")
    for name in judges:
        page.check(f"input[name=members][value='{name}']")
    # a verdict has no mean: refused on the rule, nothing stored
    page.check("input[name=rule][value='mean']")
    page.click("#submit")
    page.wait_for_selector("#field-rule .errorlist")
    assert "a verdict has no mean" in page.inner_text("#field-rule .errorlist")
    assert not Evaluator.objects.filter(name="two battle judges").exists()
    # a pairwise judge with a scoring judge: refused on the members
    page.check("input[name=members][value='gpt-4-eval']")
    page.check("input[name=rule][value='majority']")
    page.click("#submit")
    page.wait_for_selector("#field-members .errorlist")
    assert "all score answers or all compare" in page.inner_text("#field-members .errorlist")

    page.uncheck("input[name=members][value='gpt-4-eval']")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/panels/\d+/$"))
    panel = Evaluator.objects.get(name="two battle judges")
    assert panel.project == team_data
    assert panel.config == {"members": judges, "rule": "majority", "pairwise": True}
    assert "Its members are pairwise judges" in page.inner_text("body")

    page.click("#panel-report")
    page.wait_for_selector("#panels")
    body = page.inner_text("body")
    part = body[body.index("Judge panels") :]
    assert "Members: battle-judge-a, battle-judge-b (pairwise judges). Rule: majority" in part
    # the two judges never agree in an order: every panel verdict is a tie
    assert "Responses compared with the baseline's:" in part
    # each pairwise judge, the panel too, ranked from a few of the crowd's pairs
    section = body[body.index("Prediction-powered rank-sets from pairwise verdicts") :]
    assert f"from a few of {crowd}'s pairs" in section
    for name in [*judges, "two battle judges"]:
        assert name in section


def test_a_viewer_gets_no_panel_button_and_the_form_refuses_him(browser, live_server, team_data):
    vic = User.objects.create_user("vic", password="pw-vic-123", role="researcher")
    Membership.objects.filter(user=vic).delete()
    Membership.objects.create(user=vic, project=team_data, role="viewer")
    page = sign_in(browser, live_server, "vic", "pw-vic-123", path="/console/judges/")
    assert page.locator("#new-panel").count() == 0
    answer = page.goto(f"{live_server.url}/console/judges/panels/new/")
    assert answer.status == 403
    assert "You may create in none of your projects" in page.inner_text("body")


def test_a_researcher_of_a_second_project_makes_probe_answers(browser, live_server, team_data):
    page = sign_in(browser, live_server, path="/console/judges/")
    page.click("#new-probes")
    dataset = Dataset.objects.get(version="qa", split="test2", language="en")
    page.select_option("#id_dataset", str(dataset.pk))
    page.uncheck("input[name=kinds][value='irrelevant-passage']")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/$"))
    assert "probe answers made" in page.inner_text("body")
    runs = GenerationRun.objects.filter(system__name__startswith="probe-")
    assert runs.count() == 4 and {r.project for r in runs} == {team_data}
    assert not runs.filter(system__name="probe-irrelevant-passage").exists()
    questions = dataset.question_texts.count()
    assert all(r.responses.count() == questions for r in runs)
