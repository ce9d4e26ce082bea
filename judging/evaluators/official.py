"""The metric each task's official scorer applies, by benchmark and task, so
that a researcher names the task and gets its authors' metric.

- L-Eval (`Evaluation/auto_eval.py`): the task is recognised by words in the
  predictions file's name, in this order: a multiple-choice task (coursera,
  several answers may be right; quality, tpo), "gsm", "codeU", topic
  retrieval, sci_fi; any other task is scored by its lines' `evaluation`
  (exam, f1 or rouge: the script takes the last line it scores).
- ZeroSCROLLS (the `tau/zero_scrolls` metric, the paper's Table 2): ROUGE
  (the geometric mean of ROUGE-1/2/L) for the four summarisation tasks, F1
  for Qasper, NarrativeQA and MuSiQue, accuracy for QuALITY, exponential
  similarity for SpaceDigest, the concordance index for BookSumSort.
- LongBench v2 (`pred.py`, `result.py`): its accuracy, whatever the task.
- RULER (`evaluate.py`, `synthetic.yaml`): string_match_all for the needle,
  variable-tracking and word-extraction tasks, string_match_part for QA; a
  stored task is RULER's name and its length (`niah_single_1-4096`).
- BABILong (`metrics.py`, `collect_results.py`): its accuracy for every
  task, qa1-qa20, each with its own labels; a stored task is the bAbI task
  and its length (`qa1-4k`).
- LooGLE (`Evaluation/automatic_eval.py`): several metrics a task, BLEU-1/4
  and ROUGE-1/2/L recall for its QA and summary tasks, exact and partial
  match for shortdep_cloze (`official_metrics` names them all,
  `official_metric` the first).
- HELMET (`scripts/collect_results.py`'s dataset_to_metrics): substring exact
  match for JSON KV, the RAG datasets and RULER's QA, ruler_recall for
  RULER's other tasks, ROUGE-L F1 for InfiniteBench QA, exact match for its
  choices (NarrativeQA and the summaries are scored by its GPT-4o judge);
  the task is HELMET's dataset name (`kilt_nq`, `infbench_qa_eng_130862`).
"""

from __future__ import annotations

from collections.abc import Iterable

from corpus.importers.formats import zeroscrolls as zeroscrolls_format
from corpus.ruler.constants import ALL_TASKS
from judging.evaluators.leval import AUTOMATIC_EVALUATIONS
from judging.metrics import babilong, helmet, loogle, ruler

# (words in the file's name, metric), tested in auto_eval.py's order
LEVAL_BY_NAME = (
    ("coursera", "leval.exam_coursera"),
    ("quality", "leval.exam_choice"),
    ("tpo", "leval.exam_choice"),
    ("gsm", "leval.exam_math"),
    ("codeU", "leval.exam_code"),
    ("topic_retrieval_longchat", "leval.exam_topics"),
    ("sci_fi", "leval.exam_scifi"),
)
LEVAL_BY_EVALUATION = {"exam": "leval.exam", "f1": "leval.f1", "rouge": "leval.rouge"}
ZEROSCROLLS_METRICS = {
    "gov_report": "zeroscrolls.rouge",
    "summ_screen_fd": "zeroscrolls.rouge",
    "qmsum": "zeroscrolls.rouge",
    "squality": "zeroscrolls.rouge",
    "qasper": "zeroscrolls.f1",
    "narrative_qa": "zeroscrolls.f1",
    "musique": "zeroscrolls.f1",
    "quality": "zeroscrolls.accuracy",
    "space_digest": "zeroscrolls.exp_similarity",
    "book_sum_sort": "zeroscrolls.concordance_index",
}
BENCHMARKS = ("leval", "zeroscrolls", "longbench_v2", "ruler", "babilong", "loogle", "helmet")
assert set(ZEROSCROLLS_METRICS) == set(zeroscrolls_format.TASKS)


class NoOfficialMetric(ValueError):
    """The task has no official metric here; the message says why."""


def official_metrics(
    benchmark: str, task: str, evaluations: Iterable[str | None] = ()
) -> tuple[str, ...]:
    """Every metric the benchmark's own code scores `task` with (LooGLE's
    several; one for the others)."""
    if benchmark == "loogle":
        try:
            return loogle.metrics_for(task)
        except ValueError as error:
            raise NoOfficialMetric(str(error)) from None
    return (official_metric(benchmark, task, evaluations),)


def official_metric(benchmark: str, task: str, evaluations: Iterable[str | None] = ()) -> str:
    """The metric's name (as `score --list` shows it) the benchmark's own code
    scores `task` with (LooGLE's first); `evaluations`: the lines' L-Eval
    `evaluation` fields, in order (they decide the tasks L-Eval does not
    recognise by name)."""
    if benchmark == "loogle":
        return official_metrics(benchmark, task)[0]
    if benchmark == "helmet":
        reported = helmet.reported_metric(task)
        if reported is None:
            raise NoOfficialMetric(
                f"HELMET reports no metric of its code for {task!r} here: NarrativeQA and the "
                "summaries are scored by its GPT-4o judge, re-ranking, citations and ICL are "
                "not here; the datasets: json_kv, kilt_nq, kilt_triviaqa, kilt_hotpotqa, "
                "kilt_popqa_3, ruler_*, infbench_qa_eng, infbench_choice_eng."
            )
        return f"helmet.{reported}"
    if benchmark == "longbench_v2":  # one task, one metric (pred.py, result.py)
        return "longbench_v2.accuracy"
    if benchmark == "babilong":  # one metric for every task (metrics.py's compare_answers)
        try:
            babilong.labels_for(task)
        except ValueError as error:
            raise NoOfficialMetric(str(error)) from None
        return babilong.ACCURACY
    if benchmark == "ruler":
        found = ruler.metric_for(task)
        if found is None:
            raise NoOfficialMetric(
                f"No RULER task {ruler.task_name(task)!r}: one of {', '.join(ALL_TASKS)} "
                "(stored with its length: niah_single_1-4096)."
            )
        return found
    if benchmark == "zeroscrolls":
        metric = ZEROSCROLLS_METRICS.get(task.lower())
        if metric is None:
            raise NoOfficialMetric(
                f"No ZeroSCROLLS task {task!r}: one of {', '.join(ZEROSCROLLS_METRICS)}."
            )
        return metric
    if benchmark != "leval":
        raise NoOfficialMetric(
            f"No official metric for benchmark {benchmark!r}: one of {', '.join(BENCHMARKS)}."
        )
    name = "codeU" if task.lower() == "codeu" else task
    for words, metric in LEVAL_BY_NAME:
        if words in name:
            return metric
    scored = [e for e in evaluations if e in AUTOMATIC_EVALUATIONS]
    if not scored:
        raise NoOfficialMetric(
            f"L-Eval's script scores task {task!r} by its lines' 'evaluation' (exam, f1 or "
            "rouge), and no line has one (LLM and human lines are judged, not scored)."
        )
    return LEVAL_BY_EVALUATION[scored[-1]]
