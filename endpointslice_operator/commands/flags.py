"""The flags the cluster commands share with ``run`` (``--kubeconfig``, ``--managed-by``,
``--annotation-prefix``), and their settings: what a command was given, read as ``run`` would
read it (its environment variables too), so every command finds the same cluster and names."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic is imported only when settings are read: `--help` stays fast
    from endpointslice_operator.settings import Settings

__all__ = ["add_annotation_prefix", "add_cluster_flags", "settings_of"]


def add_cluster_flags(parser: argparse.ArgumentParser, *, managed_by: bool = True) -> None:
    """``--kubeconfig`` and (unless ``managed_by`` is false) ``--managed-by``."""
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (default: as run)")
    if managed_by:
        parser.add_argument(
            "--managed-by",
            metavar="NAME",
            help="the operator's controller name (default: $ENDPOINTSLICE_OPERATOR_MANAGED_BY, "
            "else endpointslice-operator.io)",
        )


def add_annotation_prefix(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--annotation-prefix", metavar="PREFIX", help=help)


def settings_of(
    args: argparse.Namespace, names: Iterable[str], repeated: Iterable[str] = ()
) -> Settings:
    """The settings ``run`` would load from the flags ``names`` (attribute names of ``args``;
    ``repeated``: list-valued ones, given once per value) and the environment."""
    from endpointslice_operator.settings import load_settings

    argv: list[str] = []
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            argv += ["--" + name.replace("_", "-"), value]
    for name in repeated:
        for value in getattr(args, name, None) or ():
            argv += ["--" + name.replace("_", "-"), value]
    return load_settings(argv, os.environ)
