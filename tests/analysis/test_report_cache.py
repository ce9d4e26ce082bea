"""The report page's figures served as PNG and SVG, for researchers only; the
report and its figures cached under what they are computed from: hit on the
second request, missed after the data (or the selection) changes."""

import re
import uuid
import xml.etree.ElementTree as ET
from html import unescape

import pytest
from django.core.cache import caches
from django.utils import timezone

from analysis.figures import drawing, plots
from analysis.report import build as report_module
from analysis.report import caching
from analysis.report.selection import Selection
from annotator.actions.arrival import check_start_assignment
from annotator.actions.participants import check_exclude_participant
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.models import Participant
from judging.models import Judgment
from tests.annotator.conftest import make_study

pytestmark = pytest.mark.django_db

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PAGE = "/analysis/report/"
SELECTION = {"dataset_version": "qa", "split": "test2", "mode": "st"}
LOCAL_DEFAULT = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


@pytest.fixture
def counted(monkeypatch):
    """How many reports were built and figures drawn (not read from the cache)."""
    calls = {"reports": 0, "figures": 0}
    build, draw = report_module.report_of, drawing.draw

    def counting_build(*args, **kwargs):
        calls["reports"] += 1
        return build(*args, **kwargs)

    def counting_draw(*args, **kwargs):
        calls["figures"] += 1
        return draw(*args, **kwargs)

    monkeypatch.setattr(report_module, "report_of", counting_build)
    monkeypatch.setattr(drawing, "draw", counting_draw)
    return calls


def plot_links(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="(/analysis/report/plot/[^"]+)"', html)]


def test_every_figure_of_the_page_downloads_as_png_and_svg(four_meetings, client, researcher):
    client.force_login(researcher)
    page = client.get(PAGE, SELECTION)
    assert page.status_code == 200
    html = page.content.decode()
    names = list(plots.figures(caching.cached_report(Selection(**SELECTION))[0].report))
    assert len(names) == 7
    links = plot_links(html)
    assert sorted(re.search(r"/plot/(\w+\.\w+)\?", link)[1] for link in links) == sorted(
        f"{name}.{fmt}" for name in names for fmt in ("png", "svg")
    )
    for link in links:
        answer = client.get(link)
        assert answer.status_code == 200, link
        name = re.search(r"/plot/(\w+)\.", link)[1]
        if ".png?" in link:
            assert answer["Content-Type"] == "image/png"
            assert answer.content.startswith(PNG_MAGIC)
        else:
            assert answer["Content-Type"] == "image/svg+xml"
            assert ET.fromstring(answer.content).tag == "{http://www.w3.org/2000/svg}svg"
        # named after the selection, the figure, the day (core.downloads)
        today = timezone.localdate().isoformat()
        assert answer["Content-Disposition"] == (
            f'attachment; filename="concord-report-qa-test2-st-{name}-{today}'
            f'.{link.split(".")[1][:3]}"'
        )
        # the selection travelled with the link
        assert "split=test2" in link and "mode=st" in link and "dataset_version=qa" in link
    # the page still embeds every image (it stands alone when saved)
    assert html.count('src="data:image/png;base64,') == len(names)


def test_plots_are_for_researchers_only(four_meetings, client, researcher, gold_annotator):
    url = "/analysis/report/plot/means.png"
    assert client.get(url).status_code == 302  # to the sign-in page
    client.force_login(gold_annotator)
    assert client.get(url).status_code == 403
    assert client.get(url.replace(".png", ".svg")).status_code == 403
    client.force_login(researcher)
    assert client.get(url).status_code == 200
    unknown = client.get("/analysis/report/plot/pie.png")
    assert unknown.status_code == 404
    assert client.get("/analysis/report/plot/means.gif").status_code == 404
    bad = client.get(url, {"mode": "xx"})
    assert bad.status_code == 400 and b"Bad selection" in bad.content
    # a figure the selection has no data for
    empty = client.get("/analysis/report/plot/gold_bins.png", {"split": "test2", "mode": "mt"})
    assert empty.status_code == 404


def test_the_cache_is_hit_on_the_second_request_and_missed_after_the_data_change(
    four_meetings, client, researcher, counted
):
    client.force_login(researcher)
    first = client.get(PAGE, SELECTION).content
    assert counted == {"reports": 1, "figures": 7}
    second = client.get(PAGE, SELECTION).content
    assert counted == {"reports": 1, "figures": 7}  # nothing built or drawn again
    # the same page, up to the per-request CSRF token
    token = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]+"')
    assert token.sub(b"", first) == token.sub(b"", second)
    # a download of a figure the page drew is read from the cache too
    client.get("/analysis/report/plot/gold_bins.png", SELECTION)
    assert counted == {"reports": 1, "figures": 7}
    client.get("/analysis/report/plot/gold_bins.svg", SELECTION)
    assert counted == {"reports": 1, "figures": 8}  # the SVG, once
    client.get("/analysis/report/plot/gold_bins.svg", SELECTION)
    assert counted == {"reports": 1, "figures": 8}
    # the JSON of the same selection is the cached report
    assert client.get(PAGE, {**SELECTION, "format": "json"}).status_code == 200
    assert counted["reports"] == 1

    judgment = Judgment.objects.filter(evaluator__name="gpt-4-eval").first()
    Judgment.objects.filter(pk=judgment.pk).update(score=1 + (judgment.score % 9))
    changed = client.get(PAGE, SELECTION).content
    assert counted["reports"] == 2 and counted["figures"] > 8
    assert token.sub(b"", changed) != token.sub(b"", first)
    # another selection is another report
    client.get(PAGE, {**SELECTION, "systems": "Synthetic-Echo,Synthetic-Hedge"})
    assert counted["reports"] == 3


def test_an_excluded_rater_changes_the_key_by_itself(four_meetings, researcher, counted):
    """A study's accepted ratings are judgments; excluding a rater takes theirs
    out of the table, so the report (and its figures) are computed again; so
    does a rater quality control flags (left out of the analysis by default)."""
    # the simulated raters answer at once: no speed threshold (not what is tested here)
    study = make_study(raters=3, min_median_seconds=0)
    for number, pid in enumerate(("P1", "P2", "P3", "P4", "P5", "P6")):
        assignment = check_start_assignment(study, pid=pid)
        for position, _ in enumerate(assignment.item_order, 1):
            check_rate_item(assignment, position, score=3 + ((number + 1) * position) % 7)
        check_complete_assignment(assignment)
    selection = Selection(study=study.pk)
    first, _ = caching.cached_report(selection)
    caching.cached_figures(first, "png")
    assert counted == {"reports": 1, "figures": 7}
    _, hit = caching.cached_report(selection)
    assert hit
    crowd = "crowd human (Crowd pilot)"
    assert first.report.counts.raters[crowd] == 6
    check_exclude_participant(
        Participant.objects.get(study=study, prolific_pid="P2"), researcher, "too fast"
    )
    after, hit = caching.cached_report(selection)
    assert not hit and after.report.counts.raters[crowd] == 5
    assert after.content_sha256 != first.content_sha256
    caching.cached_figures(after, "png")
    assert counted == {"reports": 2, "figures": 14}
    # flagged by quality control: the same judgments, but this rater is left out
    Participant.objects.filter(study=study, prolific_pid="P3").update(
        flagged=True, flag_reason="median 0.2 s per item < 25.0 s"
    )
    flagged, hit = caching.cached_report(selection)
    assert not hit and flagged.report.counts.raters[crowd] == 4
    assert [r.rater for r in flagged.report.scope.raters if not r.counted] == ["P2", "P3"]


def test_the_key_covers_what_the_report_reads(four_meetings):
    selection = Selection(**SELECTION)
    entry, hit = caching.cached_report(selection)
    assert not hit
    again, hit = caching.cached_report(selection)
    assert hit and again == entry
    assert again.report.stamp.created_at == entry.report.stamp.created_at  # when computed
    # an evaluator's recorded kind is read by the trust section: part of the key
    from judging.models import Evaluator

    Evaluator.objects.filter(name="prometheus-eval").update(config={"original_kind": "x"})
    _, hit = caching.cached_report(selection)
    assert not hit
    # bootstrap resamples are part of what is computed
    _, hit = caching.cached_report(selection, bootstrap=20)
    assert not hit


def test_table_digest_ignores_row_order_and_sees_every_cell():
    import pandas as pd

    table = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    shuffled = table.iloc[[2, 0, 1]].reset_index(drop=True)
    assert caching.table_digest(table) == caching.table_digest(shuffled)
    assert caching.table_digest(table[["b", "a"]]) == caching.table_digest(table)
    changed = table.assign(b=["x", "y", "w"])
    assert caching.table_digest(changed) != caching.table_digest(table)
    assert caching.table_digest(table.iloc[:0]) != caching.table_digest(table)


def test_the_command_file_embeds_its_images_without_links(
    four_meetings, tmp_path, client, researcher
):
    """The file and the live page share the report and its figures, not the
    part of the page that holds the links (cached for each kind of page)."""
    from django.core.management import call_command

    client.force_login(researcher)
    page = client.get(PAGE, SELECTION).content.decode()
    assert len(plot_links(page)) == 14
    out = tmp_path / "report.html"
    call_command(
        "agreement_report",
        "--format",
        "html",
        "--output",
        str(out),
        "--dataset-version",
        "qa",
        "--split",
        "test2",
        "--mode",
        "st",
    )
    html = out.read_text()
    assert html.count('src="data:image/png;base64,') == 7
    assert "/analysis/report/plot/" not in html and "csrfmiddlewaretoken" not in html
    # and the page keeps its links after the file was written
    assert len(plot_links(client.get(PAGE, SELECTION).content.decode())) == 14


@pytest.mark.parametrize("backend", ["files", "redis"])
def test_web_processes_share_the_cache(four_meetings, tmp_path, monkeypatch, counted, backend):
    """What one web process computed, another reads: the cache of production
    (files under var/ on one machine, Redis across machines), not memory."""
    from django.test import override_settings

    from config.settings.base import report_cache
    from tests.conftest import port_open, require
    from tests.workers import redis_url

    prefix = f"test-{uuid.uuid4().hex[:8]}"
    if backend == "redis":
        url = redis_url()
        host, _, port = url.split("://", 1)[1].split("/", 1)[0].rpartition(":")
        require(
            port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}"
        )
        config = report_cache(url, tmp_path) | {"KEY_PREFIX": prefix}
    else:
        config = report_cache("", tmp_path)
    selection = Selection(**SELECTION)
    with override_settings(CACHES={caching.REPORTS: config} | LOCAL_DEFAULT):
        try:
            entry, hit = caching.cached_report(selection)
            figures = caching.cached_figures(entry, "png")
            assert not hit and counted == {"reports": 1, "figures": 7}
            other = caches.create_connection(caching.REPORTS)  # another process's connection
            monkeypatch.setattr(caching, "cache", lambda: other)
            again, hit = caching.cached_report(selection)
            assert hit and again.json == entry.json and again.report == entry.report
            assert again.report.to_json() == entry.json  # fields left out stay out
            assert caching.cached_figures(again, "png") == figures
            assert counted == {"reports": 1, "figures": 7}
        finally:
            if backend == "redis":
                client = caches[caching.REPORTS]._cache.get_client(write=True)
                for key in client.scan_iter(match=f"{prefix}:*"):
                    client.delete(key)
