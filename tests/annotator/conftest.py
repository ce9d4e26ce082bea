import pytest

from annotator import services
from annotator.models import Study
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from generation.models import System
from judging.importing import import_elitr_bench
from judging.models import Evaluator


@pytest.fixture
def two_meetings(tmp_path, db):
    """Synthetic ELITR data: 2 meetings x 6 questions x 3 systems, with gold scores."""
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


def make_study(name="Crowd pilot", kind=Study.Kind.CROWD, raters=2, **fields) -> Study:
    study = Study.objects.create(
        name=name,
        kind=kind,
        raters_per_task=raters,
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        completion_code="C0DE1234",
        **fields,
    )
    study.systems.set(System.objects.all())
    services.build_items(study)
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
