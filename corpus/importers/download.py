"""Downloads the ELITR-Bench archives from their public GitHub repositories.

The archives stay as the authors published them (password-protected) in a
cache folder; the importer reads them in memory.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from corpus.importers.errors import ImportFailure

# The commits the data README names; pinned so every download is the same data.
ELITR_BENCH_COMMIT = "8364952"
MEETINGDATA_COMMIT = "a528415"
ARCHIVES = {
    "data.zip": f"https://github.com/utter-project/ELITR-Bench/raw/{ELITR_BENCH_COMMIT}/data.zip",
    "czech.zip": f"https://github.com/utter-project/ELITR-Bench/raw/{ELITR_BENCH_COMMIT}/czech.zip",
    "generated-responses.zip": (
        f"https://github.com/utter-project/ELITR-Bench/raw/{ELITR_BENCH_COMMIT}/"
        "generated-responses.zip"
    ),
    "ELITR-English-dev.tar.zip": (
        f"https://github.com/utter-project/UTTER-MS9-meetingdata/raw/{MEETINGDATA_COMMIT}/"
        "ELITR-English-dev.tar.zip"
    ),
    "ELITR-English-test.tar.zip": (
        f"https://github.com/utter-project/UTTER-MS9-meetingdata/raw/{MEETINGDATA_COMMIT}/"
        "ELITR-English-test.tar.zip"
    ),
}


def download_elitr_bench(
    target: str | Path,
    *,
    mirror: str | None = None,
    timeout: float = 60,
    report: Callable[[str], None] = lambda message: None,
) -> Path:
    """Fetch every archive missing from `target` and return `target`.

    `mirror` replaces the GitHub URLs by `<mirror>/<file name>` (a local copy,
    or a test server). A file is written under a temporary name and renamed
    when complete, so an interrupted download never looks like an archive.
    """
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    for name, url in ARCHIVES.items():
        destination = target / name
        if destination.exists() and destination.stat().st_size > 0:
            continue
        if mirror:
            url = f"{mirror.rstrip('/')}/{name}"
        report(f"downloading {url}")
        handle, partial = tempfile.mkstemp(dir=target, prefix=f".{name}.")
        try:
            with (
                os.fdopen(handle, "wb") as out,
                urllib.request.urlopen(url, timeout=timeout) as answer,
            ):
                while chunk := answer.read(1 << 16):
                    out.write(chunk)
            os.replace(partial, destination)
        except urllib.error.HTTPError as error:
            raise ImportFailure(
                f"Downloading {url} failed: HTTP {error.code} {error.reason}."
            ) from error
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as error:
            raise ImportFailure(
                f"Could not download {url} ({getattr(error, 'reason', error)}): this machine "
                f"seems to be offline. Copy the ELITR-Bench archives ({', '.join(ARCHIVES)}) "
                f"into {target} and run this again (or pass a folder holding them as SOURCE, "
                "or set CONCORD_ELITR_DATA)."
            ) from error
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return target
