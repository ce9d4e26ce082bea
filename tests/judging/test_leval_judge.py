"""L-Eval's judge as L-Eval ran it (Evaluation/llm_eval.py; the expected
strings, verdicts and win rates come from running that script:
tests/data/leval/judge.json): its system prompt and template byte for byte,
its sampling, its reading of a verdict, both orders, and win rates counted per
order with ties a half and errors left out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.statistics.pairwise import win_rates
from judging.evaluators import JudgeConfig, checked_judge, judge_for
from judging.evaluators.judges import LevalPairwise
from judging.models import JudgeItem
from judging.parsers import Verdict

DATA = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "leval" / "judge.json").read_text(
        encoding="utf-8"
    )
)
SETTINGS = {"protocol": "leval_pairwise", "baseline": "turbo-16k-0613", "model": "gpt-4"}


def judge() -> LevalPairwise:
    found = judge_for(JudgeConfig.from_dict(SETTINGS))
    assert isinstance(found, LevalPairwise)
    return found


def test_the_prompts_are_leval_byte_for_byte():
    example = DATA["request_example"]
    inputs = example["inputs"]
    system, user = judge().messages(
        inputs["question"], inputs["ref_answer"], inputs["answer_a"], inputs["answer_b"]
    )
    assert system == {"role": "system", "content": DATA["system_prompt"]}
    assert len(system["content"].encode()) == DATA["system_prompt_utf8_bytes"] == 1176
    assert hashlib.sha256(system["content"].encode()).hexdigest() == DATA["system_prompt_sha256"]
    # the values go in as they are: braces, curly quotes and all
    assert user == {"role": "user", "content": example["user_prompt"]}


def test_the_sampling_is_leval_s():
    config = judge().config
    assert config.sampling(2023) == {"temperature": 0.0, "max_tokens": 2048}  # no top_p, no seed
    assert (config.reask, config.counting) == (0, "per_order")
    assert DATA["sampling"]["kwargs_sent"] == {
        "model": "gpt-4",
        "n": 1,
        "temperature": 0,
        "max_tokens": 2048,
    }
    # a researcher's own setting wins over the protocol's defaults
    tuned = JudgeConfig.from_dict(SETTINGS | {"max_tokens": 512, "counting": "consistent"})
    assert (tuned.max_tokens, tuned.counting, tuned.temperature) == (512, "consistent", 0.0)
    assert type(checked_judge("llm_pairwise", SETTINGS)) is LevalPairwise


@pytest.mark.parametrize("case", DATA["verdict_cases"], ids=lambda c: repr(c["judgment"])[:30])
def test_each_verdict_is_read_as_leval_reads_it(case):
    parsed = judge().parse(case["judgment"])
    expected = {"A": Verdict.A, "B": Verdict.B, "tie": Verdict.TIE, "error": None}[case["verdict"]]
    assert parsed.value == expected and parsed.ok == (expected is not None)


def test_both_orders_put_the_judged_answer_first_then_second():
    from generation.models import Response

    item = JudgeItem(order=1, seed=0, response=Response(text="mine"))
    item.opponent = Response(text="baseline's")
    messages = judge().item_messages(item, "Q?", "Ref.")
    user = messages[1]["content"]
    assert user.index("baseline's") < user.index("mine")  # order 1: the baseline is A


@pytest.mark.parametrize("run", DATA["win_rate_runs"], ids=lambda r: r["name"][:40])
def test_win_rates_are_leval_s(run):
    """Each of L-Eval's runs replayed: its judge answers read by Concord, stored
    as verdicts are (order 0: the judged answer is A; order 1: the baseline is),
    counted per order: the judged system's rate is L-Eval's."""
    rows = []
    for number, pair in enumerate(run["pairs"]):
        for order, text in ((0, pair["g1_judgment"]), (1, pair["g2_judgment"])):
            verdict = judge().parse(text).value
            if verdict is None:
                continue  # an error: no verdict stored, left out of the counts
            rows.append(
                {
                    "evaluator": "leval judge",
                    "response_id": number,
                    "opponent_id": 1000 + number,
                    "seed": 0,
                    "order": order,
                    "winner": verdict.value,
                    "system": run["model"],
                    "baseline": run["baseline"],
                    "rater": "",
                }
            )
    columns = ["evaluator", "response_id", "opponent_id", "seed", "order", "winner"]
    table = pd.DataFrame(rows, columns=[*columns, "system", "baseline", "rater"])
    found = win_rates(table, "per_order").get("leval judge", {}).get(run["model"])
    if not rows:
        assert found is None
        return
    if run["model"] in run["win_rates"]:
        expected = run["win_rates"][run["model"]]
    else:
        # L-Eval prints no rate for a side without a win; its formula still gives
        # (ties / 2 + 0) / verdicts, which Concord shows
        ties = sum(1 for r in rows if r["winner"] == "tie")
        expected = 0.5 * ties / len(rows)
    assert found["win_rate"] == pytest.approx(expected, abs=1e-12)
