"""What the proxy reads of the Kafka protocol: a frame's size and its request header, nothing more.

Every Kafka request and response is an int32 big-endian size followed by that many bytes. A request's
header is api_key int16, api_version int16, correlation_id int32, then (request header v1 and v2) the
client_id as an int16-length string, -1 for null; ControlledShutdown v0 alone uses header v0, which has no
client_id (Kafka's generator/.../ApiMessageTypeGenerator.java, `requestHeaderVersion`). The tagged fields
of header v2 come after the client_id, which keeps its non-compact form (RequestHeader.json:
`"flexibleVersions": "none"` on ClientId), so they are never read. A response begins with its
correlation_id. Bodies are never parsed: the proxy must keep working on every release line, and the header
is the part of the protocol that has not changed since 0.8.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Final

#: A size above this (or below what a header needs) is not Kafka framing: the connection is then
#: passed through as raw bytes rather than misread. Kafka's own default `socket.request.max.bytes` is 100 MiB.
MAX_FRAME: Final = 100 * 1024 * 1024
SIZE: Final = struct.Struct(">i")
_FIXED: Final = struct.Struct(">hhi")
_CLIENT_ID_LENGTH: Final = struct.Struct(">h")
CONTROLLED_SHUTDOWN: Final = 7
#: `SO_ORIGINAL_DST` from linux/netfilter_ipv4.h: where a connection was headed before iptables REDIRECT.
SO_ORIGINAL_DST: Final = 80
#: How many bytes of a response after its size an `answered` event carries: enough for the correlation id,
#: a flexible header's tagged-fields byte and the first fields of the body, where the error code lives; for
#: the answers whose errors are per partition, past a topic name of up to 30 characters (__consumer_offsets
#: in a WriteTxnMarkers answer v0 among them).
RESPONSE_HEAD: Final = 64


@dataclass(frozen=True)
class Header:
    """A request header as the proxy reads it: what a rule selects on and an event records."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def frame_size(buffer: bytes | bytearray, offset: int, smallest: int) -> int | None:
    """The size the 4-byte prefix at `offset` announces, or None when it cannot be Kafka framing: below
    `smallest` (8 for a request's fixed header, 4 for a response's correlation id) or above MAX_FRAME."""
    (size,) = SIZE.unpack_from(buffer, offset)
    if size < smallest or size > MAX_FRAME:
        return None
    return int(size)


def parse_header(buffer: bytes | bytearray, start: int = 0, end: int | None = None) -> Header:
    """The header of the request whose body (the bytes after its size) is `buffer[start:end]`.

    Read in place, without copying the body: the proxy reads frames out of the chunks a socket gives it.
    A client_id that does not fit the frame, or is not UTF-8, is read as None rather than refused: the
    broker is the one that judges a request, the proxy only forwards it.
    """
    end = len(buffer) if end is None else end
    api_key, api_version, correlation_id = _FIXED.unpack_from(buffer, start)
    client_id: str | None = None
    at = start + _FIXED.size
    if not (api_key == CONTROLLED_SHUTDOWN and api_version == 0) and end - at >= 2:
        (length,) = _CLIENT_ID_LENGTH.unpack_from(buffer, at)
        at += 2
        if 0 <= length <= end - at:
            try:
                client_id = bytes(buffer[at : at + length]).decode("utf-8")
            except UnicodeDecodeError:
                client_id = None
    return Header(api_key, api_version, correlation_id, client_id)


def original_destination(raw: bytes) -> tuple[str, int]:
    """(address, port) of a `struct sockaddr_in` as `getsockopt(SOL_IP, SO_ORIGINAL_DST, 16)` returns it:
    family (2 bytes, host order), port (2 bytes, network order), IPv4 address (4 bytes)."""
    (port,) = struct.unpack_from("!H", raw, 2)
    return socket.inet_ntoa(raw[4:8]), int(port)


def redirected_destination(sock: socket.socket) -> tuple[str, int]:
    """Where an iptables-REDIRECTed connection was going: the broker the proxy must reach on its behalf."""
    return original_destination(sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16))
