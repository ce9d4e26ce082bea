"""An LLM judge made and tried from the console, in Chromium, as a
researcher would: no admin and no JSON. The form's fields make the judge's
settings; its page shows the prompt filled with a real item; "Try it on 3
items" asks the model (a local OpenAI-compatible server) and shows the raw
answers with the scores read in them, on the call ledger, so that a run with
the same settings asks nothing of them again. A bad template is refused on
its field, and nothing is stored."""

from __future__ import annotations

import re

import pytest

from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.judging_runs import create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import Evaluator
from judging.trial import try_judge
from llm.models import LLMCall
from tests.browsing import sign_in
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from users.models import User

pytestmark = pytest.mark.browser


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def test_a_researcher_makes_a_judge_and_tries_it_on_three_items(
    browser, live_server, transactional_db, tmp_path, server
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = sign_in(browser, live_server, path="/console/")
    page.click("nav a:has-text('Judges')")
    page.click("#new-judge")
    page.fill("#id_name", "my rubric judge")
    page.select_option("#id_protocol", "rubric")
    page.select_option("#id_server", "vllm")
    page.fill("#id_base_url", server.url)
    page.fill("#id_model", "judge-model")
    page.select_option("#id_api_key_env", "")
    page.fill("#id_temperature", "0")
    page.fill("#id_max_tokens", "256")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/\d+/$"))
    judge = Evaluator.objects.get(name="my rubric judge")
    assert judge.kind == "llm_rubric" and judge.config["base_url"] == server.url
    assert judge.config["server"] == "vllm" and judge.config["temperature"] == 0
    assert "api_key_env" not in judge.config  # no key: a server that needs none
    # the prompt, filled with a real item: the paper's rubric around a response
    preview = page.inner_text("#prompt-preview")
    assert "### Response to evaluate:" in preview and "### Reference" in preview
    assert server.count == 0  # nothing asked yet
    page.click("#try-judge")
    page.wait_for_selector("#trial-answers")
    rows = page.locator("#trial-answers tbody tr")
    assert rows.count() == 3
    assert all(row.get_attribute("data-outcome") == "ok" for row in rows.all())
    assert "score" in rows.first.inner_text() and "\\boxed{" in rows.first.inner_text()
    assert server.count == 3 and LLMCall.objects.filter(purpose="judge").count() == 3
    # no price set: the list says so
    page.click("nav a:has-text('Judges')")
    assert "not set: cost unknown" in page.inner_text("#judges")

    # a judge with token probabilities: refused on a server that gives none, then
    # made on one that does; its trial shows each score's probability
    page.click("#new-judge")
    page.fill("#id_name", "judge with probabilities")
    page.select_option("#id_server", "ollama")
    page.fill("#id_base_url", server.url)
    page.fill("#id_model", "judge-model")
    page.select_option("#id_api_key_env", "")
    page.check("#id_logprobs")
    page.click("#submit")
    page.wait_for_selector("#field-logprobs .errorlist")
    assert "does not give token probabilities" in page.inner_text("#field-logprobs .errorlist")
    assert not Evaluator.objects.filter(name="judge with probabilities").exists()
    page.select_option("#id_server", "vllm")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/\d+/$"))
    assert Evaluator.objects.get(name="judge with probabilities").config["logprobs"] is True
    page.click("#try-judge")
    page.wait_for_selector("#trial-answers")
    shown = page.locator("#trial-answers [data-probability]")
    assert shown.count() == 3
    drawn = sorted(server.answer_probability.values())
    for cell in shown.all():
        value = float(cell.get_attribute("data-probability"))
        assert min(abs(value - p) for p in drawn) < 1e-12  # what the server's tokens said
        assert "token probability" in cell.inner_text()
    page.click("nav a:has-text('Judges')")

    # a custom template without the response it judges: refused on its field
    page.click("#new-judge")
    page.fill("#id_name", "broken template")
    page.select_option("#id_protocol", "custom")
    page.fill("#id_base_url", server.url)
    page.fill("#id_template", "Rate this: {question}")
    page.click("#submit")
    page.wait_for_selector("#field-template .errorlist")
    assert "{response}" in page.inner_text("#field-template .errorlist")
    assert not Evaluator.objects.filter(name="broken template").exists()


def test_a_run_after_a_trial_asks_nothing_the_trial_asked(transactional_db, tmp_path, server):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    from judging.trial import sample_items

    judge = Evaluator.objects.create(
        name="tried judge",
        kind="llm_rubric",
        config={"server": "vllm", "base_url": server.url, "model": "judge-model", "seeds": [2023]},
    )
    answers = try_judge(judge.config, sample_items(judge.config, qa_test2()))
    assert [a.outcome for a in answers] == ["ok"] * 3 and server.count == 3
    run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert run.status == "done" and run.cache_hits >= 3
    # the run sent only what the trial had not asked
    assert server.count == 3 + run.requests


def test_a_pairwise_judge_is_made_and_tried_against_its_baseline(
    browser, live_server, transactional_db, tmp_path
):
    """Its form has the baseline (systems that answered) and the counting;
    the trial asks each pair in both orders and says which system won, the
    order undone: a judge that always prefers the answer shown first gives
    each pair one win each way."""
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    with FakeOpenAI(first_wins=True) as biased:
        page = sign_in(browser, live_server, path="/console/judges/new/")
        page.fill("#id_name", "pairwise judge")
        page.select_option("#id_protocol", "pairwise")
        page.select_option("#id_server", "vllm")
        page.fill("#id_base_url", biased.url)
        page.fill("#id_model", "judge-model")
        page.select_option("#id_api_key_env", "")
        page.click("#submit")  # no baseline: refused on its field
        page.wait_for_selector("#field-baseline .errorlist")
        assert "baseline" in page.inner_text("#field-baseline .errorlist")
        assert not Evaluator.objects.filter(name="pairwise judge").exists()
        page.select_option("#id_baseline", "Synthetic-Echo")
        page.select_option("#id_counting", "per_order")
        page.click("#submit")
        page.wait_for_url(re.compile(r"/console/judges/\d+/$"))
        judge = Evaluator.objects.get(name="pairwise judge")
        assert judge.kind == "llm_pairwise"
        assert judge.config["baseline"] == "Synthetic-Echo"
        assert judge.config["counting"] == "per_order"
        assert "[The Start of Assistant A's Answer]" in page.inner_text("#prompt-preview")
        assert "6 calls to the model (each pair in both orders)" in page.inner_text("#try-form")
        page.click("#try-judge")
        page.wait_for_selector("#trial-answers")
        rows = page.locator("#trial-answers tbody tr").all()
        assert len(rows) == 6 and biased.count == 6
        assert all(row.get_attribute("data-outcome") == "ok" for row in rows)
        systems = [row.locator("td").first.inner_text() for row in rows]
        assert "Synthetic-Echo" not in systems  # the baseline is not judged against itself
        winners = [row.get_attribute("data-winner") for row in rows]
        # shown first, judged first (order 0): it wins; swapped (order 1): the baseline does
        assert winners == [w for s in systems[::2] for w in (s, "Synthetic-Echo")]
        assert "[[A]]" in rows[0].inner_text() and "wins" in rows[0].inner_text()


def test_loogles_judge_is_made_with_its_authors_settings_and_tried(
    browser, live_server, transactional_db, tmp_path, server
):
    """The form left as it opens keeps LooGLE's temperature 0 and 10 tokens
    (the rubric's 0.6 and 1,024 are the form's, not LooGLE's); the trial reads
    True and False, and an answer that is neither stays unread."""
    from tests.judging.test_loogle_judge import import_answers

    import_answers(tmp_path)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = sign_in(browser, live_server, path="/console/judges/new/")
    page.fill("#id_name", "LooGLE QA judge")
    page.select_option("#id_protocol", "loogle_qa")
    page.select_option("#id_server", "vllm")
    page.fill("#id_base_url", server.url)
    page.select_option("#id_api_key_env", "")
    page.click("#submit")
    page.wait_for_url(re.compile(r"/console/judges/\d+/$"))
    judge = Evaluator.objects.get(name="LooGLE QA judge")
    assert "temperature" not in judge.config and "max_tokens" not in judge.config
    assert "groudtruth = " in page.inner_text("#prompt-preview")
    page.click("#try-judge")
    page.wait_for_selector("#trial-answers")
    rows = page.locator("#trial-answers tbody tr").all()
    outcomes = sorted(row.get_attribute("data-outcome") for row in rows)
    assert outcomes == ["ok", "ok", "parse_failure"]
    sent = server.requests
    assert all(r["temperature"] == 0 and r["max_tokens"] == 10 for r in sent)
