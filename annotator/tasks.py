from annotator.actions.participants import check_release_stale
from annotator.models import Study
from config.celery import app


@app.task(name="annotator.release_stale_work")
def release_stale_work() -> int:
    """Release unfinished work past its time limit in every open study.

    Arrivals already do this for their own study; the periodic run also frees
    places (and shows them in the admin) when nobody is arriving."""
    return sum(
        check_release_stale(study)
        for study in Study.objects.filter(status__in=[Study.Status.OPEN, Study.Status.PAUSED])
    )
