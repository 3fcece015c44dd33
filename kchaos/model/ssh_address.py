"""One machine kchaos reaches over SSH, as `--nodes` names it: `ssh://USER@HOST[:PORT]`.

The user is required (kchaos never guesses who to log in as: root and a sudoer behave differently), the
port defaults to 22, and a host may be a name, an IPv4 address or a bracketed IPv6 one. `--nodes` takes a
comma-separated list of them or the path of a file with one per line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The most machines one run takes: a node each, as many as `--brokers` and the other roles allow.
MAX_NODES = 64
SCHEME = "ssh://"
#: A login name as POSIX tools accept them.
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}")
#: A host name or IPv4 address, or an IPv6 address in brackets.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]+\]")
EXAMPLE = "ssh://root@10.0.0.5 or ssh://ops@kafka-1.example:2222"


@dataclass(frozen=True)
class SshAddress:
    """Where kchaos logs in: `user` at `host`, SSH on `port`."""

    user: str
    host: str
    port: int = 22

    def __str__(self) -> str:
        return f"{SCHEME}{self.user}@{self.host}:{self.port}"

    @property
    def bare_host(self) -> str:
        """The host without an IPv6 address's brackets: what a socket connects to."""
        return self.host.strip("[]")


def parse_ssh_address(text: str) -> SshAddress:
    """The address `text` names; ValueError naming it and the form otherwise."""
    form = f"{text!r} is not ssh://USER@HOST[:PORT] ({EXAMPLE})"
    if not text.startswith(SCHEME):
        raise ValueError(form)
    user, at, rest = text[len(SCHEME) :].partition("@")
    if not at or not _USER.fullmatch(user):
        raise ValueError(f"{form}: name the user to log in as")
    host, port = rest, "22"
    if rest.startswith("["):
        host, _, after = rest.partition("]")
        host += "]"
        if after:
            if not after.startswith(":"):
                raise ValueError(form)
            port = after[1:]
    elif ":" in rest:
        host, _, port = rest.partition(":")
    if not _HOST.fullmatch(host):
        raise ValueError(f"{form}: {host!r} is no host name or address")
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"{form}: the port must be from 1 to 65535")
    return SshAddress(user, host, int(port))


def nodes_from(items: Sequence[str]) -> tuple[SshAddress, ...]:
    """The machines `--nodes` names: its comma-separated addresses, or those in the file it names (one per
    line, `#` starts a comment). ValueError when there are none, more than `MAX_NODES`, or one twice."""
    lines = list(items)
    if len(lines) == 1 and not lines[0].startswith(SCHEME):
        path = Path(lines[0])
        if not path.is_file():
            raise ValueError(f"{lines[0]!r} is neither an address ({EXAMPLE}) nor a file of them")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{lines[0]!r} could not be read ({exc}); give a UTF-8 file of addresses"
            ) from None
        lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        lines = [line for line in lines if line]
    if not lines or len(lines) > MAX_NODES:
        raise ValueError(f"give 1 to {MAX_NODES} machines, not {len(lines)}")
    addresses = tuple(parse_ssh_address(line) for line in lines)
    seen: set[tuple[str, int]] = set()
    for address in addresses:
        if (address.bare_host, address.port) in seen:
            raise ValueError(f"{address} is named twice; one Kafka node runs on each machine")
        seen.add((address.bare_host, address.port))
    return addresses
