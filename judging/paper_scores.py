"""The ELITR-Bench paper's published scores (GPT-4, Prometheus, gold and silver
humans) written as judgments of the paper's responses, idempotently."""

from __future__ import annotations

from django.db import transaction

from corpus.bulk import SyncCount, id_map, sync_rows
from corpus.importers.elitr_bench import PaperResponse
from corpus.services import SYNTHETIC_ELITR_BENCH
from generation.paper_responses import ResponseKey
from judging import scores
from judging.evaluators import Precomputed, Scale
from judging.models import Evaluator, Judgment

# The evaluators of the ELITR-Bench paper, as its generated-responses files name
# them. Their scores are stored as published, on the 1-10 scale the files use.
# The paper's scores (its four evaluators), on the common 1-10 scale already.
PAPER_SCALE = Precomputed(Scale(1, 10, whole=False))

PAPER_EVALUATORS = {
    "gpt-4-eval": {
        "description": "GPT-4 (gpt-4-0613) rubric judge, 1-10, as published by the ELITR-Bench "
        "authors.",
        "config": {"original_kind": "llm_rubric", "judge_model": "gpt-4-0613"},
    },
    "prometheus-eval": {
        "description": "Prometheus judge as published: its 1-5 scores multiplied by 2 by the "
        "authors.",
        "config": {"original_kind": "llm_rubric", "raw_scale": [1, 5], "multiplied_by": 2},
    },
    "gold-human-eval": {
        "description": "Gold Human: one expert's 1-10 rubric scores, as published.",
        "config": {"original_kind": "gold_human"},
    },
    "silver-human-eval": {
        "description": "Silver Human: mean of 10 Prolific crowd ratings (1-10), as published.",
        "config": {"original_kind": "crowd_human", "raters_per_response": 10},
    },
}


@transaction.atomic
def import_paper_scores(
    responses: list[PaperResponse], response_ids: dict[ResponseKey, int]
) -> dict[str, SyncCount]:
    names = sorted({name for r in responses for name in r.scores})
    counts = {
        "evaluators": sync_rows(
            Evaluator.objects.filter(name__in=names),
            (
                {
                    "name": name,
                    "kind": Evaluator.Kind.IMPORTED,
                    "origin": Evaluator.Origin.PAPER,
                    "project_id": None,  # shared: the published release's scores
                    "raw_scale_min": 1,
                    "raw_scale_max": 10,
                    **PAPER_EVALUATORS.get(name, {"description": "", "config": {}}),
                }
                for name in names
            ),
            key=("name",),
        )
    }
    evaluator_ids = {
        k[0]: v for k, v in id_map(Evaluator.objects.filter(name__in=names), ("name",)).items()
    }
    rows = []
    for r in responses:
        response_id = response_ids[
            (r.system, r.version, r.split, r.mode, r.meeting_id, r.question_id)
        ]
        for name, score in r.scores.items():
            # the paper's scores are on the common scale already: stored as they are
            rows.append(PAPER_SCALE.judgment_fields(evaluator_ids[name], response_id, score))
    counts["judgments"] = sync_rows(
        Judgment.objects.filter(evaluator_id__in=evaluator_ids.values(), seed__isnull=True),
        rows,
        key=scores.JUDGMENT_KEY,
        compare=("score", "raw_score"),
    )
    label_invented_scores(list(evaluator_ids.values()))
    return counts


# The synthetic demo meeting (corpus.importers.synthetic) carries scores under the
# paper's evaluator names, so that the demo runs as on the real data; they are
# made up, the "human" ones included, and each such evaluator says so.
INVENTED_ONLY = (
    "INVENTED: made-up scores of the synthetic demo meeting (benchmark {benchmark}), "
    "written by Concord under the paper's evaluator name so that the demo runs as on the "
    "real data; no person or model gave them."
)
INVENTED_TOO = " Its scores on the synthetic demo meeting (benchmark {benchmark}) are invented."


def paper_description(name: str, *, real: bool, invented: bool) -> str:
    """What an evaluator of the paper's files holds: the published scores, the
    synthetic meeting's invented ones, or both."""
    published = str(PAPER_EVALUATORS.get(name, {}).get("description", ""))
    benchmark = SYNTHETIC_ELITR_BENCH["name"]
    if invented and not real:
        return INVENTED_ONLY.format(benchmark=benchmark)
    if invented:
        return (published + INVENTED_TOO.format(benchmark=benchmark)).strip()
    return published


def label_invented_scores(evaluator_ids: list[int]) -> None:
    """Give each evaluator of an ELITR import the description of what it now
    holds (published scores, invented ones, or both), unless someone wrote
    their own description in the meantime."""
    synthetic = SYNTHETIC_ELITR_BENCH["slug"]
    for evaluator in Evaluator.objects.filter(pk__in=evaluator_ids):
        benchmarks = set(
            Judgment.objects.filter(evaluator=evaluator)
            .values_list("response__question__document__benchmark__slug", flat=True)
            .distinct()
        )
        invented = synthetic in benchmarks
        real = bool(benchmarks - {synthetic}) or not invented
        ours = {"", paper_description(evaluator.name, real=True, invented=False)} | {
            paper_description(evaluator.name, real=r, invented=True) for r in (True, False)
        }
        wanted = paper_description(evaluator.name, real=real, invented=invented)
        if evaluator.description in ours and evaluator.description != wanted:
            evaluator.description = wanted
            evaluator.save(update_fields=["description"])
