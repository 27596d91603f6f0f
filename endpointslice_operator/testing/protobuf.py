"""Just enough of Kubernetes' protobuf encoding to accept kubectl's ``create namespace``.

kubectl's generator commands send built-in objects as ``application/vnd.kubernetes.protobuf``
and do not fall back to JSON. Without the generated schemas, the emulator decodes only the
envelope (``k8s\\0`` + ``runtime.Unknown``) and the object metadata of the kinds listed in
:data:`DECODABLE_KINDS`; other protobuf bodies get a 415 that suggests a manifest instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from endpointslice_operator.testing.errors import ApiError

JSON = dict[str, Any]
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
# Kinds whose protobuf body is metadata plus fields that defaulting fills in anyway.
DECODABLE_KINDS = frozenset({"Namespace"})

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message; length-delimited values stay bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire == LENGTH:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == FIXED64:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == FIXED32:
            value, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ValueError("expected a string")
    return value.decode()


def _string_map_entry(value: int | bytes) -> tuple[str, str]:
    entry = dict(fields(value if isinstance(value, bytes) else b""))
    return _text(entry.get(1, b"")), _text(entry.get(2, b""))


_META_STRINGS = {1: "name", 2: "generateName", 3: "namespace"}


def object_meta(data: bytes) -> JSON:
    """metav1.ObjectMeta: the fields a client sets (name, generateName, namespace, labels,
    annotations, finalizers); server-managed ones are ignored, as on create."""
    meta: JSON = {}
    for number, value in fields(data):
        if number in _META_STRINGS:
            text = _text(value)
            if text:  # proto2 strings are sent even when empty
                meta[_META_STRINGS[number]] = text
        elif number == 11:
            key, text = _string_map_entry(value)
            meta.setdefault("labels", {})[key] = text
        elif number == 12:
            key, text = _string_map_entry(value)
            meta.setdefault("annotations", {})[key] = text
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    return meta


def decode(raw: bytes) -> JSON:
    """A protobuf request body as a JSON object, or a 415 when it is beyond this decoder."""
    unsupported = ApiError(
        415,
        "the emulator reads protobuf bodies only for kinds "
        f"{', '.join(sorted(DECODABLE_KINDS))}; send JSON or YAML (kubectl create -f / apply -f)",
        reason="UnsupportedMediaType",
    )
    if not raw.startswith(MAGIC):
        raise unsupported
    try:
        unknown = dict(fields(raw[len(MAGIC) :]))
        type_meta = dict(fields(unknown.get(1, b"")))  # type: ignore[arg-type]
        api_version, kind = _text(type_meta.get(1, b"")), _text(type_meta.get(2, b""))
        if kind not in DECODABLE_KINDS:
            raise unsupported
        body: JSON = {"apiVersion": api_version, "kind": kind, "metadata": {}}
        for number, value in fields(unknown.get(2, b"")):  # type: ignore[arg-type]
            if number == 1 and isinstance(value, bytes):
                body["metadata"] = object_meta(value)
        return body
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, f"unable to decode the protobuf body: {error}")


OPENAPI_V2_MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _length_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | LENGTH) + _encode_varint(len(payload)) + payload


def openapi_v2_document(version: str) -> bytes:
    """gnostic's ``openapi.v2.Document`` with only ``swagger``, ``info`` and empty ``paths``:
    what kubectl's ``OpenAPISchema()`` unmarshals before client-side validation."""
    info = _length_field(1, b"Kubernetes") + _length_field(2, version.encode())
    return _length_field(1, b"2.0") + _length_field(2, info) + _length_field(8, b"")
