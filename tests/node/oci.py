"""What an OCI image archive holds, read with the standard library: its config (user,
entrypoint, environment) and the files of its final filesystem (layers applied in order,
whiteouts honoured). No container runtime needed."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


@dataclass(frozen=True)
class Image:
    config: dict[str, Any]
    files: frozenset[str]
    """Every path of the final filesystem, without a leading slash (directories included)."""


def _blob(archive: tarfile.TarFile, digest: str) -> bytes:
    member = archive.extractfile("blobs/" + digest.replace(":", "/", 1))
    assert member is not None, digest
    return member.read()


def _apply(files: set[str], layer: tarfile.TarFile) -> None:
    for member in layer.getmembers():
        path = member.name.removeprefix("./").rstrip("/")
        parent, _, base = path.rpartition("/")
        if base == OPAQUE:
            prefix = parent + "/"
            files.difference_update({f for f in files if f.startswith(prefix)})
        elif base.startswith(WHITEOUT):
            gone = (parent + "/" if parent else "") + base.removeprefix(WHITEOUT)
            files.difference_update({f for f in files if f == gone or f.startswith(gone + "/")})
        elif path:
            files.add(path)


def read(path: Path) -> Image:
    with tarfile.open(path) as archive:
        index = json.loads(_blob_or_file(archive, "index.json"))
        manifest = json.loads(_blob(archive, index["manifests"][0]["digest"]))
        config = json.loads(_blob(archive, manifest["config"]["digest"]))
        files: set[str] = set()
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=io.BytesIO(_blob(archive, layer["digest"]))) as content:
                _apply(files, content)
    return Image(config=config, files=frozenset(files))


def _blob_or_file(archive: tarfile.TarFile, name: str) -> bytes:
    member = archive.extractfile(name)
    assert member is not None, name
    return member.read()
