import pytest

from annotator import services
from annotator.models import Study
from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator


def make_study(name="Crowd pilot", kind=Study.Kind.CROWD, raters=2, **fields) -> Study:
    """A study over every system's test2 QA responses, saved (and built) as the
    admin and the API save one, then opened."""
    study = Study(
        name=name,
        kind=kind,
        raters_per_task=raters,
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        completion_code="C0DE1234",
        **fields,
    )
    services.save_study(study, [], after_save=lambda saved: saved.systems.set(System.objects.all()))
    services.set_study_open(study, True)
    return study


@pytest.fixture
def crowd_study(two_meetings) -> Study:
    return make_study(gold_evaluator=Evaluator.objects.get(name="gold-human-eval"))


@pytest.fixture
def gold_study(two_meetings) -> Study:
    return make_study(name="Gold pass", kind=Study.Kind.GOLD, raters=1)


def entry_url(study: Study, pid: str, session: str = "SESSION1") -> str:
    return f"/s/{study.public_id}/?PROLIFIC_PID={pid}&STUDY_ID=PSTUDY&SESSION_ID={session}"
