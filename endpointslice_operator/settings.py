"""The operator's settings: command-line flags, ``ENDPOINTSLICE_OPERATOR_*`` variables, defaults.

:class:`Settings` is a frozen pydantic-settings model: ``Settings()`` reads the environment,
``Settings(field=value)`` overrides it. The ``run`` command uses :func:`load_settings`, which
parses the flags (flags override the environment, the environment overrides the defaults) and
turns any invalid value into one :class:`SettingsError` line naming the setting, its flag and its
environment variable, e.g.::

    invalid setting max_endpoints_per_slice (--max-endpoints-per-slice /
    ENDPOINTSLICE_OPERATOR_MAX_ENDPOINTS_PER_SLICE): must be between 1 and 1000, got 0

Each setting is declared once, as a field made by :func:`setting` (its help, its metavar, and
its flag or default text where they are not the field's own); :data:`SETTINGS_TABLE` is made from
the fields, and the ``--help`` text and ``docs/configuration.md`` from the table.
"""

from __future__ import annotations

import argparse
import os
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

__all__ = [
    "ENV_PREFIX",
    "SERVICEACCOUNT_NAMESPACE_FILE",
    "SETTINGS_TABLE",
    "SettingSpec",
    "Settings",
    "SettingsError",
    "build_parser",
    "load_settings",
    "parse_duration",
    "setting",
    "settings_table_markdown",
]

ENV_PREFIX = "ENDPOINTSLICE_OPERATOR_"
#: Where Kubernetes mounts the Pod's namespace for its service account.
SERVICEACCOUNT_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class SettingsError(ValueError):
    """Invalid settings; ``str()`` has one line per invalid setting, naming the setting, its flag
    and its variable."""


def parse_duration(value: object) -> float:
    """Seconds from a number or a Go-style duration: ``1.5``, ``"500ms"``, ``"1m30s"``."""
    if isinstance(value, bool):
        raise ValueError(f"must be a duration such as 1s or 500ms, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"must be a duration such as 1s or 500ms, got {value!r}")
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    parts = list(_DURATION_PART.finditer(body))
    if not body or not parts or "".join(p.group(0) for p in parts) != body:
        raise ValueError(f"must be a duration such as 1s or 500ms, got {value!r}")
    return sign * sum(float(p.group(1)) * _UNIT_SECONDS[p.group(2)] for p in parts)


def _check_dns_label(value: str, what: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(
            f"{what} must be a DNS label (at most 63 lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit), got {value!r}"
        )
    return value


def _check_dns_subdomain(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(
            "must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 "
            f"characters, each part starting and ending with a letter or digit), got {value!r}"
        )
    return value


def _between(low: float, high: float | None = None) -> Callable[[float], float]:
    """A check of a number's range, with a uniform message."""

    def check(value: float) -> float:
        if high is None:
            if value < low:
                raise ValueError(f"must be at least {low:g}, got {value:g}")
        elif not low <= value <= high:
            raise ValueError(f"must be between {low:g} and {high:g}, got {value:g}")
        return value

    return check


# When set, Settings(...) takes its values from its keyword arguments only (load_settings has
# already merged the explicit environment mapping and the flags).
_INIT_ONLY: ContextVar[bool] = ContextVar(
    "endpointslice_operator_settings_init_only", default=False
)


def setting(
    default: Any,
    help: str,
    *,
    metavar: str | None = None,
    flag: str | None = None,
    shown: str | None = None,
) -> Any:
    """A :class:`Settings` field declared once: its default, its help, its metavar, and its
    flag and default as shown where they are not ``--`` and the field's name with dashes, and
    the default's value."""
    extra = {"metavar": metavar, "flag": flag, "shown": shown}
    return Field(
        default,
        description=help,
        json_schema_extra={key: value for key, value in extra.items() if value is not None},
    )


class Settings(BaseSettings):
    """Everything the operator can be told at start. Immutable."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        frozen=True,
        extra="forbid",
        case_sensitive=False,
        validate_default=True,
    )

    kubeconfig: Path | None = setting(
        None,
        "Path of a kubeconfig file. Without it: the in-cluster service account, else the "
        "default kubeconfig (`$KUBECONFIG` or `~/.kube/config`).",
        metavar="PATH",
    )
    managed_by: str = setting(
        "endpointslice-operator.io",
        "This controller's name: the `endpointslice.kubernetes.io/managed-by` label of the "
        "slices it manages, and the `service.kubernetes.io/endpoint-controller-name` label "
        "value by which a Service opts in.",
        metavar="NAME",
    )
    annotation_prefix: str = setting(
        "endpointslice-operator.io",
        "Prefix of the annotations `<prefix>/enabled` (opt-in) and `<prefix>/selector` (pod "
        "selector of a selectorless Service).",
        metavar="DOMAIN",
    )
    max_endpoints_per_slice: int = setting(
        100,
        "Maximum number of endpoints in one EndpointSlice (1 to 1000).",
        metavar="N",
    )
    batch_period: float = setting(
        10.0,
        "Upper bound of the delay added to syncs triggered by Pod changes. While the write "
        "budget has room every change is synced at once; while a burst exhausts it, changes "
        "are held back for as long as the budget needs to write every pending Service once, "
        "at most this long, and all are let go as soon as changes stop, so a burst costs far "
        "fewer writes and ends no later. Seconds or a duration (`1.5`, `1s`, `500ms`); `0`: "
        "every change at once.",
        metavar="DURATION",
    )
    workers: int = setting(
        5,
        "Number of Services synced concurrently (1 to 50).",
        metavar="N",
    )
    qps: float = setting(
        10.0,
        "Rate of the work queue's global token bucket for retries, in syncs per second.",
        metavar="RATE",
    )
    burst: int = setting(
        100,
        "Burst of the work queue's global token bucket.",
        metavar="N",
    )
    kube_api_qps: float = setting(
        20.0,
        "Client-side budget of the operator's API writes (EndpointSlices and Events), in "
        "requests per second, as kube-controller-manager's flag of the same name; watches are "
        "not counted.",
        metavar="RATE",
    )
    kube_api_burst: int = setting(
        30,
        "Burst of that budget (writes allowed at once after a quiet period).",
        metavar="N",
    )
    api_timeout: float = setting(
        30.0,
        "Client-side timeout of every API request but watches (writes, reads, lists page by "
        "page, Lease renewals, Events): a request without an answer in that time fails and is "
        "retried with backoff, so an API server that stops answering never holds a worker. "
        "Watches end on their own client-side read timeout. Seconds or a duration (`30`, "
        "`1m`).",
        metavar="DURATION",
    )
    namespaces: Annotated[tuple[str, ...], NoDecode] = setting(
        (),
        "Namespace to watch; repeat the flag for several. The variable takes a "
        "comma-separated list. Empty: all namespaces.",
        flag="--namespace",
        shown="(all)",
        metavar="NAME",
    )
    metrics_port: int = setting(
        8080,
        "Port of the HTTP server for `/metrics`, `/healthz` and `/readyz` (0: any free port).",
        metavar="PORT",
    )
    metrics_host: str = setting(
        "0.0.0.0",
        "Address the metrics and health endpoint listens on.",
        metavar="HOST",
    )
    leader_election: bool = setting(
        True,
        "Elect a leader through a coordination.k8s.io/v1 Lease so that several replicas can "
        "run; only the leader writes.",
    )
    lease_name: str = setting(
        "endpointslice-operator",
        "Name of the leader-election Lease.",
        metavar="NAME",
    )
    lease_namespace: str | None = setting(
        None,
        "Namespace of the leader-election Lease. Unset: `$POD_NAMESPACE`, else the namespace "
        "of the Pod's service account, else `default`.",
        shown="(the operator's namespace)",
        metavar="NAME",
    )
    log_format: Literal["text", "json"] = setting(
        "text",
        "Log format: `text`, or `json` (one JSON object per line).",
        metavar="{text,json}",
    )
    log_level: Literal["debug", "info", "warning", "error"] = setting(
        "info",
        "Log level: `debug`, `info`, `warning` or `error`.",
        metavar="LEVEL",
    )
    topology_hints: bool = setting(
        True,
        "Add zone hints for Services annotated `service.kubernetes.io/topology-mode: Auto` "
        "(upstream's topology cache); off: such Services get no hints.",
    )
    prefer_same_traffic_distribution: bool = setting(
        True,
        "Honour the `PreferSameZone` and `PreferSameNode` values of `spec.trafficDistribution` "
        "(upstream's PreferSameTrafficDistribution feature gate).",
    )
    write_endpoints: bool = setting(
        False,
        "Also write the `core/v1` Endpoints object of every managed Service (as "
        "kube-controller-manager's Endpoints controller would); off: only of Services "
        'annotated `<prefix>/endpoints: "true"`. On: the Endpoints are watched from the start and '
        "readiness waits for their listing (off: from the first Service that needs them).",
    )
    max_endpoints_per_subset: int = setting(
        1000,
        "Mirroring (`<prefix>/source: endpoints`): addresses mirrored per Endpoints subset, "
        "ready ones first (1 to 1000; kube-controller-manager's "
        "`--mirroring-max-endpoints-per-subset`).",
        metavar="N",
    )
    endpoint_selectors: bool = setting(
        True,
        "Publish the EndpointSlices of EndpointSelectors "
        "(`endpointslice-operator.io/v1alpha1`, docs/endpointselector.md) whenever the API "
        "server serves that CRD (found by discovery, checked again with a backoff of up to 5 "
        "minutes); off: never look for them.",
    )
    kep6116_labels: bool = setting(
        True,
        "Label the slices of EndpointSelectors `kubernetes.io/endpoint-selector-name` too "
        "(KEP-6116's label, beside `endpointslice-operator.io/endpoint-selector-name`); off: "
        "only the operator's own label.",
    )
    multicluster: bool = setting(
        False,
        "Multi-Cluster Services (KEP-1645, see docs/multicluster.md): serve the ServiceExports "
        "of this cluster and its peers. Needs the CRDs of `deploy/crds/` and a "
        "`cluster.clusterset.k8s.io` ClusterProperty naming this cluster.",
    )
    mcs_peers: Annotated[tuple[Path, ...], NoDecode] = setting(
        (),
        "Kubeconfig of a peer cluster (read only: ServiceExports, Services, EndpointSlices, "
        "ClusterProperty); repeat the flag for several. The variable takes a comma-separated "
        "list. The peer's cluster id is read from its ClusterProperty. Needs `--multicluster`.",
        flag="--mcs-peer",
        metavar="PATH",
    )
    mcs_peer_timeout: float = setting(
        300.0,
        "How long the endpoints of a peer that cannot be reached are kept (its Lease in this "
        "cluster is renewed while its watches are healthy); then they leave the imports. "
        "Seconds or a duration (`90s`, `5m`); default 5 minutes.",
        metavar="DURATION",
    )

    # -- validation --------------------------------------------------------------------------

    @field_validator("kubeconfig", mode="after")
    @classmethod
    def _kubeconfig_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"no such file: {str(value)!r}")
        return value

    @field_validator("mcs_peers", mode="before")
    @classmethod
    def _split_peers(cls, value: object) -> tuple[Path, ...]:
        if value is None:
            return ()
        raw = [value] if isinstance(value, str | Path) else list(value)  # type: ignore[call-overload]
        paths: list[Path] = []
        for entry in raw:
            if isinstance(entry, Path):
                paths.append(entry)
            elif isinstance(entry, str):
                paths.extend(Path(part.strip()) for part in entry.split(",") if part.strip())
            else:
                raise ValueError(f"must be kubeconfig paths, got {entry!r}")
        return tuple(dict.fromkeys(paths))

    @field_validator("mcs_peers", mode="after")
    @classmethod
    def _peers_exist(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        for path in value:
            if not path.is_file():
                raise ValueError(f"no such file: {str(path)!r}")
        return value

    @field_validator("mcs_peer_timeout", mode="before")
    @classmethod
    def _parse_peer_timeout(cls, value: object) -> float:
        seconds = parse_duration(value)
        if not seconds > 0:
            raise ValueError(f"must be greater than 0, got {value!r}")
        return seconds

    @model_validator(mode="after")
    def _peers_need_multicluster(self) -> Settings:
        if self.mcs_peers and not self.multicluster:
            raise ValueError(
                "--mcs-peer (ENDPOINTSLICE_OPERATOR_MCS_PEERS) is given but --multicluster "
                "(ENDPOINTSLICE_OPERATOR_MULTICLUSTER) is off"
            )
        return self

    @field_validator("managed_by", mode="after")
    @classmethod
    def _managed_by_is_label_value(cls, value: str) -> str:
        if not value or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ValueError(
                "must be a non-empty label value (at most 63 letters, digits, '-', '_' and "
                f"'.', starting and ending with a letter or digit), got {value!r}"
            )
        return value

    @field_validator("annotation_prefix", "lease_name", mode="after")
    @classmethod
    def _is_dns_subdomain(cls, value: str) -> str:
        return _check_dns_subdomain(value)

    @field_validator("lease_namespace", mode="after")
    @classmethod
    def _lease_namespace_is_label(cls, value: str | None) -> str | None:
        return None if value is None else _check_dns_label(value, "the namespace")

    @field_validator("max_endpoints_per_slice", "max_endpoints_per_subset", mode="after")
    @classmethod
    def _max_endpoints_range(cls, value: int) -> int:
        return int(_between(1, 1000)(value))

    @field_validator("workers", mode="after")
    @classmethod
    def _workers_range(cls, value: int) -> int:
        return int(_between(1, 50)(value))

    @field_validator("burst", mode="after")
    @classmethod
    def _burst_range(cls, value: int) -> int:
        return int(_between(1)(value))

    @field_validator("metrics_port", mode="after")
    @classmethod
    def _port_range(cls, value: int) -> int:
        return int(_between(0, 65535)(value))

    @field_validator("kube_api_burst", mode="after")
    @classmethod
    def _api_burst_range(cls, value: int) -> int:
        return int(_between(1)(value))

    @field_validator("qps", "kube_api_qps", mode="after")
    @classmethod
    def _qps_positive(cls, value: float) -> float:
        if not value > 0:
            raise ValueError(f"must be greater than 0, got {value:g}")
        return value

    @field_validator("api_timeout", mode="before")
    @classmethod
    def _parse_api_timeout(cls, value: object) -> float:
        seconds = parse_duration(value)
        if not seconds > 0:
            raise ValueError(f"must be greater than 0, got {value!r}")
        return seconds

    @field_validator("batch_period", mode="before")
    @classmethod
    def _parse_batch_period(cls, value: object) -> float:
        seconds = parse_duration(value)
        if seconds < 0:
            raise ValueError(f"must not be negative, got {value!r}")
        return seconds

    @field_validator("namespaces", mode="before")
    @classmethod
    def _split_namespaces(cls, value: object) -> tuple[str, ...]:
        if value is None:
            return ()
        items: list[str] = []
        raw = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
        for entry in raw:
            if not isinstance(entry, str):
                raise ValueError(f"must be namespace names, got {entry!r}")
            items.extend(part.strip() for part in entry.split(",") if part.strip())
        for name in items:
            _check_dns_label(name, "each namespace")
        return tuple(dict.fromkeys(items))

    @field_validator("metrics_host", mode="after")
    @classmethod
    def _host_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("log_format", "log_level", mode="before")
    @classmethod
    def _lower_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env files and no secrets directory: flags and the environment only.
        if _INIT_ONLY.get():
            return (init_settings,)
        return (init_settings, env_settings)

    # -- derived values ----------------------------------------------------------------------

    @property
    def enabled_annotation(self) -> str:
        """The opt-in annotation, ``<prefix>/enabled``."""
        return f"{self.annotation_prefix}/enabled"

    @property
    def selector_annotation(self) -> str:
        """The pod-selector annotation for selectorless Services, ``<prefix>/selector``."""
        return f"{self.annotation_prefix}/selector"

    @property
    def network_annotation(self) -> str:
        """The Multus network of a Service's addresses, ``<prefix>/network``."""
        return f"{self.annotation_prefix}/network"

    @property
    def device_network_annotation(self) -> str:
        """The DRA claim of a Service's addresses, ``<prefix>/device-network``."""
        return f"{self.annotation_prefix}/device-network"

    @property
    def source_annotation(self) -> str:
        """A Service's address source, ``<prefix>/source``: ``pods`` or ``endpoints``."""
        return f"{self.annotation_prefix}/source"

    @property
    def endpoints_annotation(self) -> str:
        """The per-Service opt-in to a ``core/v1`` Endpoints object, ``<prefix>/endpoints``."""
        return f"{self.annotation_prefix}/endpoints"

    def resolved_lease_namespace(
        self,
        environ: Mapping[str, str] | None = None,
        namespace_file: Path = SERVICEACCOUNT_NAMESPACE_FILE,
    ) -> str:
        """Where the Lease lives: the setting, else ``$POD_NAMESPACE``, else the namespace of the
        Pod's service account (in a cluster), else ``default``."""
        if self.lease_namespace:
            return self.lease_namespace
        env = os.environ if environ is None else environ
        pod_namespace = env.get("POD_NAMESPACE", "").strip()
        if pod_namespace:
            return pod_namespace
        try:
            from_file = namespace_file.read_text(encoding="utf-8").strip()
        except OSError:
            from_file = ""
        return from_file or "default"


@dataclass(frozen=True, slots=True)
class SettingSpec:
    """One row of the settings table."""

    field: str
    flag: str
    default: str
    help: str
    kind: Literal["value", "bool", "list"] = "value"
    metavar: str | None = None

    @property
    def env(self) -> str:
        return f"{ENV_PREFIX}{self.field.upper()}"

    @property
    def flags(self) -> str:
        """The flag as written in docs (``--x`` / ``--no-x`` for booleans)."""
        if self.kind == "bool":
            return f"{self.flag} / --no-{self.flag[2:]}"
        return self.flag


def _spec(name: str, field: FieldInfo) -> SettingSpec:
    extra = field.json_schema_extra
    assert isinstance(extra, dict) and field.description is not None
    value = field.default
    if "shown" in extra:
        default = str(extra["shown"])
    elif value is None or value == ():
        default = "(none)"
    elif isinstance(value, bool):
        default = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
        default = str(int(value))
    else:
        default = str(value)
    kind: Literal["value", "bool", "list"] = (
        "bool" if isinstance(value, bool) else "list" if isinstance(value, tuple) else "value"
    )
    flag = str(extra.get("flag") or "--" + name.replace("_", "-"))
    metavar = extra.get("metavar")
    return SettingSpec(
        name, flag, default, field.description, kind, None if metavar is None else str(metavar)
    )


SETTINGS_TABLE: tuple[SettingSpec, ...] = tuple(
    _spec(name, field) for name, field in Settings.model_fields.items()
)
"""Every setting, in the order :class:`Settings` declares them, made from their fields."""

_SPECS = {spec.field: spec for spec in SETTINGS_TABLE}


class _HelpFormatter(argparse.HelpFormatter):
    # Never split a long word (an environment variable name) across lines.
    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False) or [""]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print usage and exit(2)
        raise SettingsError(message)


def build_parser(prog: str = "endpointslice-operator run") -> argparse.ArgumentParser:
    """The argparse parser for the settings flags (values are validated by :class:`Settings`)."""
    parser = _Parser(
        prog=prog,
        description="Keep EndpointSlices right for the Services that opt in. Every flag has an "
        f"{ENV_PREFIX}* environment variable; flags win over variables.",
        allow_abbrev=False,
        formatter_class=_HelpFormatter,
    )
    for spec in SETTINGS_TABLE:
        help_text = f"{spec.help.replace('`', '')} [env {spec.env}; default {spec.default}]"
        if spec.kind == "bool":
            parser.add_argument(
                spec.flag,
                dest=spec.field,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif spec.kind == "list":
            parser.add_argument(
                spec.flag,
                dest=spec.field,
                action="append",
                default=None,
                metavar=spec.metavar,
                help=help_text,
            )
        else:
            parser.add_argument(
                spec.flag, dest=spec.field, default=None, metavar=spec.metavar, help=help_text
            )
    return parser


@contextmanager
def _init_only() -> Iterator[None]:
    token = _INIT_ONLY.set(True)
    try:
        yield
    finally:
        _INIT_ONLY.reset(token)


# pydantic error types -> how they read in our one-line message
_PLAIN_MESSAGES = {
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "path_type": "must be a file path",
}


def _describe_error(exc: ValidationError) -> SettingsError:
    """Every invalid setting, one line each (all of them, not just the first)."""
    lines = [_describe_one(error) for error in exc.errors(include_url=False)]
    return SettingsError("\n".join(dict.fromkeys(lines)))


def _describe_one(error: Any) -> str:
    loc = error.get("loc")
    if not loc:  # a check across settings (a model validator)
        message = str(error.get("msg", "invalid value"))
        return f"invalid settings: {message.removeprefix('Value error, ')}"
    field = str(loc[0])
    spec = _SPECS.get(field)
    where = f"{spec.flags} / {spec.env}" if spec is not None else field
    message = str(error.get("msg", "invalid value"))
    kind = str(error.get("type", ""))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    elif kind in _PLAIN_MESSAGES:
        message = f"{_PLAIN_MESSAGES[kind]}, got {error.get('input')!r}"
    elif kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", ""))
        message = f"must be one of {expected}, got {error.get('input')!r}"
    elif "input" in error:
        message = f"{message[:1].lower()}{message[1:]}, got {error['input']!r}"
    return f"invalid setting {field} ({where}): {message}"


def load_settings(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from flags (``argv``, without the program name) over ``environ`` over defaults.

    ``environ`` defaults to ``os.environ``. Raises :class:`SettingsError` with one clear line.
    ``--help`` prints the help and raises ``SystemExit(0)`` as argparse does.
    """
    env = os.environ if environ is None else environ
    parsed = vars(build_parser().parse_args(list(argv)))
    values: dict[str, Any] = {}
    for spec in SETTINGS_TABLE:
        from_env = env.get(spec.env)
        if from_env is not None:
            values[spec.field] = from_env
        from_flag = parsed.get(spec.field)
        if from_flag is not None:
            values[spec.field] = from_flag
    # An empty variable means "unset" for optional settings (e.g. a Helm value left blank).
    for field in ("kubeconfig", "lease_namespace"):
        if isinstance(values.get(field), str) and not values[field].strip():
            del values[field]
    try:
        with _init_only():
            return Settings(**values)
    except ValidationError as exc:
        raise _describe_error(exc) from None


def settings_table_markdown() -> str:
    """The settings as a Markdown table (flag, variable, default, meaning)."""
    lines = [
        "| Flag | Environment variable | Default | Meaning |",
        "|---|---|---|---|",
    ]
    for spec in SETTINGS_TABLE:
        flags = " / ".join(f"`{flag.strip()}`" for flag in spec.flags.split(" / "))
        default = spec.default if spec.default.startswith("(") else f"`{spec.default}`"
        lines.append(f"| {flags} | `{spec.env}` | {default} | {spec.help} |")
    return "\n".join(lines) + "\n"
