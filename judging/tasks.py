from celery import shared_task

from judging.importing import run_import_job


@shared_task(name="judging.run_benchmark_import", acks_late=True)
def run_benchmark_import(job_id: int) -> str:
    """Run a BenchmarkImport queued from the admin (default queue)."""
    return run_import_job(job_id).status


@shared_task(name="judging.run_judging", acks_late=True)
def run_judging(run_id: int) -> str:
    """Run a JudgingRun (automatic metrics: default queue)."""
    from judging.runs import run_metric_judging

    return run_metric_judging(run_id).status
