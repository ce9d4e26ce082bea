"""Files uploaded in the browser, kept aside until the researcher has seen
their preview and confirmed the import.

An upload is written, a chunk at a time, into a folder of its own under
`var/uploads/<token>/files/` (the volume the web and the workers share, so that a
worker can import an ELITR-Bench archive the browser sent). A file larger
than the upload limit is refused while it is written, its part deleted, and
nothing else is kept; a folder nobody confirmed is swept after a day. The
token is random and the folder records who uploaded it (`owner`): only
that account may preview or import it.
"""

from __future__ import annotations

import re
import secrets
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from corpus.importers.errors import ImportFailure
from corpus.importers.limits import size, upload_limits

TOKEN = re.compile(r"^[0-9a-f]{32}$")
# A staged upload nobody imported is deleted after this long.
KEEP_SECONDS = 24 * 3600
# Files of one upload (ELITR-Bench ships as five archives).
MAX_FILES = 8


@dataclass(frozen=True)
class StagedUpload:
    token: str
    folder: Path

    @property
    def files_folder(self) -> Path:
        return self.folder / "files"

    @property
    def files(self) -> list[Path]:
        return sorted(p for p in self.files_folder.iterdir() if p.is_file())

    @property
    def first(self) -> Path:
        files = self.files
        if not files:
            raise ImportFailure("The upload holds no file; choose it again.")
        return files[0]

    def names(self) -> list[str]:
        return [p.name for p in self.files]


def staging_root() -> Path:
    return Path(settings.VAR_DIR) / "uploads"


def safe_name(name: str) -> str:
    """The file's own name, without folders, in characters any disk takes."""
    base = Path(name.replace("\\", "/")).name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip(".-") or "upload"
    return cleaned[:120]


def stage(uploads: Iterable[tuple[str, Iterable[bytes]]], owner: int) -> StagedUpload:
    """Write each (name, chunks) into a new folder of `owner` (a user id); a
    file over the upload limit, too many files or none is refused and nothing
    stays."""
    sweep()
    limit = upload_limits().max_bytes
    token = secrets.token_hex(16)
    folder = staging_root() / token
    (folder / "files").mkdir(parents=True)
    (folder / "owner").write_text(str(owner))
    try:
        count = 0
        for name, chunks in uploads:
            count += 1
            if count > MAX_FILES:
                raise ImportFailure(f"At most {MAX_FILES} files in one upload.")
            _write(folder / "files" / safe_name(name), name, chunks, limit)
        if count == 0:
            raise ImportFailure("Choose a file to upload.")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return StagedUpload(token, folder)


def _write(path: Path, name: str, chunks: Iterable[bytes], limit: int) -> None:
    if path.exists():
        raise ImportFailure(f"{name}: two files of this name in one upload.")
    written = 0
    with path.open("wb") as out:
        for chunk in chunks:
            written += len(chunk)
            if written > limit:
                raise ImportFailure(
                    f"{name}: larger than the upload limit of {size(limit)} "
                    "(CONCORD_UPLOAD_MAX_BYTES); nothing was stored."
                )
            out.write(chunk)


def staged(token: str, owner: int) -> StagedUpload:
    """The upload a preview named, if `owner` made it; gone (imported, swept)
    or another account's answers the same: it is not there for him."""
    folder = staging_root() / token
    if not TOKEN.match(token or "") or not _owned_by(folder, owner):
        raise ImportFailure(
            "This upload is no longer kept (imported already, or older than a day): "
            "choose the file again."
        )
    return StagedUpload(token, folder)


def _owned_by(folder: Path, owner: int) -> bool:
    try:
        return (folder / "owner").read_text() == str(owner)
    except OSError:
        return False


def discard(token: str) -> None:
    if TOKEN.match(token or ""):
        shutil.rmtree(staging_root() / token, ignore_errors=True)


def is_staged_path(path: str | Path) -> str:
    """The token of a staged folder (or a file in one); "" for any other path."""
    try:
        relative = Path(path).resolve().relative_to(staging_root().resolve())
    except ValueError:
        return ""
    token = relative.parts[0] if relative.parts else ""
    return token if TOKEN.match(token) else ""


def _old(now: float) -> Iterator[Path]:
    root = staging_root()
    if not root.is_dir():
        return
    for folder in root.iterdir():
        if TOKEN.match(folder.name) and now - folder.stat().st_mtime > KEEP_SECONDS:
            yield folder


def sweep(now: float | None = None) -> int:
    """Delete staged uploads older than a day; how many went."""
    old = list(_old(time.time() if now is None else now))
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return len(old)
