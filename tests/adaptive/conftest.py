from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from adaptive.loop import check_create
from adaptive.models import AdaptiveStudy
from corpus.models import Dataset
from generation.models import System
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment

SYSTEMS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")


@pytest.fixture
def paper(elitr_data_unlocked, db):
    import_elitr_bench(elitr_data_unlocked, with_responses=True, languages=("en",))
    gold = Evaluator.objects.get(name="gold-human-eval")
    truth = {}
    for rid, score in Judgment.objects.filter(evaluator=gold).values_list("response_id", "score"):
        truth.setdefault(rid, []).append(score)
    means = {rid: float(np.mean(s)) for rid, s in truth.items()}
    return {
        "dataset": Dataset.objects.get(version="qa", language="en", split="test2"),
        "systems": list(System.objects.filter(name__in=SYSTEMS).order_by("name")),
        "judge": Evaluator.objects.get(name="gpt-4-eval"),
        "other": Evaluator.objects.get(name="prometheus-eval"),
        "silver": Evaluator.objects.get(name="silver-human-eval"),
        "truth": means,
    }


def make(paper, researcher=None, groups=None, **fields) -> AdaptiveStudy:
    values = {
        "name": "Adaptive: crowd vs GPT-4",
        "goal": AdaptiveStudy.Goal.MEANS,
        "half_width": 1.0,
        "population": AdaptiveStudy.Population.CROWD,
        "dataset": paper["dataset"],
        "mode": "st",
        "judge": paper["judge"],
        "uncertainty_judge": paper["other"],
        "prior_humans": paper["silver"],
        "budget_pence": 60000,
        "deadline": timezone.now() + timedelta(days=2),
        "draws_per_wave": 80,
        "min_labels": 20,
        "t_opt": 200,
        "scale": 2.5,
    }
    values.update(fields)
    return check_create(AdaptiveStudy(**values), paper["systems"], actor=researcher, groups=groups)
