"""Downloading the archives: from a local HTTP server standing in for GitHub."""

import functools
import http.server
import threading

import pytest
from django.core.management import CommandError, call_command

from corpus.importers.download import ARCHIVES
from corpus.models import Document
from tests.conftest import database_snapshot


@pytest.fixture
def archive_server(elitr_data):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(elitr_data))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def download_dir(settings, tmp_path):
    settings.CONCORD_ELITR_DATA = ""
    settings.CONCORD_DOWNLOAD_DIR = tmp_path / "downloads"
    return tmp_path / "downloads" / "elitr-bench"


@pytest.mark.django_db
def test_download_then_import(archive_server, download_dir, capsys):
    call_command("import_elitr_bench", "--download-from", archive_server, "--languages", "en")
    assert sorted(p.name for p in download_dir.iterdir()) == sorted(ARCHIVES)
    assert Document.objects.count() == 18
    assert "downloading" in capsys.readouterr().out
    # A second run uses the archives already there: no server needed.
    call_command("import_elitr_bench", "--download-from", "http://127.0.0.1:9", "--languages", "en")
    assert "Nothing changed" in capsys.readouterr().out


@pytest.mark.django_db
def test_offline_says_so_and_leaves_no_partial_file(download_dir):
    before = database_snapshot()
    # Port 9 (discard) on the loopback: nothing listens, the connection is refused.
    with pytest.raises(CommandError, match="seems to be offline"):
        call_command("import_elitr_bench", "--download-from", "http://127.0.0.1:9")
    assert list(download_dir.iterdir()) == []
    assert database_snapshot() == before


@pytest.mark.django_db
def test_missing_file_on_the_server(tmp_path, download_dir):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(CommandError, match="HTTP 404"):
            call_command(
                "import_elitr_bench",
                "--download-from",
                f"http://127.0.0.1:{server.server_address[1]}",
            )
    finally:
        server.shutdown()
    assert list(download_dir.iterdir()) == []
