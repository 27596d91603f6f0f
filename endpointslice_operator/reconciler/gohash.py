"""The hash upstream orders ports by: 128-bit FNV-1a of go-spew's ``%#v`` text of a value.

Upstream (Kubernetes 1.35 and later; MD5 before) sorts an EndpointSlice's ports, and an
Endpoints subset's ports, by the hex digest of ``fnv.New128a()`` over ``dump.ForHash(port)``,
go-spew's ``%#v`` rendering with methods off. Only the two port structs are rendered here:
``discovery/v1`` EndpointPort (four pointer fields) and ``core/v1`` EndpointPort (three value
fields and a pointer). Both Go packages are named ``v1``, hence the type names.
"""

from __future__ import annotations

__all__ = ["core_port_dump", "fnv1a_128_hex", "slice_port_dump"]

_FNV128_OFFSET = 0x6C62272E07BB014262B821756295C58D
_FNV128_PRIME = (1 << 88) + 0x13B
_MASK128 = (1 << 128) - 1


def fnv1a_128_hex(text: str) -> str:
    """Go's ``hex.EncodeToString(fnv.New128a().Sum(text))``."""
    value = _FNV128_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV128_PRIME) & _MASK128
    return format(value, "032x")


def _pointer(go_type: str, value: object) -> str:
    """A pointer field: ``(*int32)80``, ``(*string)<nil>``."""
    return f"(*{go_type})<nil>" if value is None else f"(*{go_type}){value}"


def slice_port_dump(
    name: str | None, port: int | None, protocol: str | None, app_protocol: str | None
) -> str:
    """``discovery/v1`` EndpointPort: Name, Protocol, Port, AppProtocol, all pointers."""
    return (
        f"(v1.EndpointPort){{Name:{_pointer('string', name)} "
        f"Protocol:{_pointer('v1.Protocol', protocol)} "
        f"Port:{_pointer('int32', port)} "
        f"AppProtocol:{_pointer('string', app_protocol)}}}"
    )


def core_port_dump(name: str, port: int, protocol: str, app_protocol: str | None) -> str:
    """``core/v1`` EndpointPort: Name, Port, Protocol by value, AppProtocol a pointer."""
    return (
        f"(v1.EndpointPort){{Name:(string){name} Port:(int32){port} "
        f"Protocol:(v1.Protocol){protocol} AppProtocol:{_pointer('string', app_protocol)}}}"
    )
