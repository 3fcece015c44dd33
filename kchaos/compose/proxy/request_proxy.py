"""The request proxy: a Kafka-protocol-aware TCP proxy that holds, drops or delays chosen requests.

    python3 -m proxy.request_proxy --listen 0.0.0.0:19092 --redirected --control 0.0.0.0:19999 \\
        --events /var/log/kchaos/proxy-events.jsonl
    python3 request_proxy.py --listen 127.0.0.1:0 --upstream 127.0.0.1:9092 --control 127.0.0.1:0

A process pause freezes a whole client and this kernel has no netem, so neither can delay one request
while everything else flows; this can. It reads only each frame's size and its request header (framing.py),
never a body, so it works on every release line. Upstream is fixed (`--upstream`), or, behind an iptables
REDIRECT in the same network namespace (`--redirected`), each connection's original destination: the
proxy then connects to that broker itself, and its own connection leaves through OUTPUT, which the
REDIRECT (in PREROUTING) does not see, so it does not loop. A connection made straight to the proxy's port
in that mode has no other destination and is refused.

Once both servers listen, one JSON line on stdout says where: `{"listen": "HOST:PORT", "control": ...}`
(so a port 0 can be read back). SIGTERM or SIGINT stops it: held requests are recorded as `answer_lost`,
the events file is flushed and closed, and it exits 0.

Control, on `--control`: one JSON object a line, each answered with one line `{"ok": true, ...}` or
`{"ok": false, "error": "..."}` (the events a command causes come before its answer):

- `{"op": "rule", "rule": ID, "action": "hold"|"drop"|"delay", "api_keys": [26], "client_id": "p-0",
  "client_prefix": "p-", "peers": ["172.18.0.5"], "count": 1, "probability": 1.0, "seed": 7,
  "delay_ms": 3000}`: see rules.py; only `rule` and `action` (and `delay_ms` for a delay) are required.
- `{"op": "release", "rule": ID}`: every request the rule holds goes on, in each connection's order.
- `{"op": "remove", "rule": ID}`: the rule stops selecting; what it holds stays held until released.
- `{"op": "release_all"}`, `{"op": "status"}` (the rules and the held requests).

Every control client also receives every event as a line `{"event": ..., "seq": ...}`, and `--events`
keeps them all (events.py; the sequence of a request's events is in connection.py).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import signal
import sys
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: make the siblings importable as this directory's package
    _HERE = Path(__file__).resolve().parent
    sys.path.insert(0, str(_HERE.parent))
    __package__ = _HERE.name
    importlib.import_module(_HERE.name)

from .connection import Connection, report
from .events import EventLog
from .framing import Header, redirected_destination
from .rules import Rule, RuleError, parse_rule

OPS = ("rule", "release", "remove", "release_all", "status")
CONNECT_TIMEOUT = 10.0


class Proxy:
    """The rules, the live connections and the control protocol."""

    def __init__(self, events: EventLog, upstream: tuple[str, int] | None, answer_timeout: float) -> None:
        self.events = events
        self.answer_timeout = answer_timeout
        self.upstream = upstream
        self.rules: dict[str, Rule] = {}
        self.connections: set[Connection] = set()
        self._numbered = 0

    def selecting(self) -> bool:
        return any(rule.active for rule in self.rules.values())

    def select(self, header: Header, peer: str) -> Rule | None:
        """The first rule, in the order they were added, that takes the request."""
        for rule in self.rules.values():
            if rule.select(header, peer):
                return rule
        return None

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A new client connection: find its broker, connect, pump until both sides end."""
        self._numbered += 1
        number = self._numbered
        peer = str(writer.get_extra_info("peername")[0])
        try:
            if self.upstream is not None:
                host, port = self.upstream
            else:
                host, port = redirected_destination(writer.get_extra_info("socket"))
                here = writer.get_extra_info("sockname")
                if (host, port) == (here[0], here[1]):
                    raise ConnectionRefusedError(f"{host}:{port} is the proxy itself, not a redirect")
            broker = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as error:
            report(error, number)
            writer.transport.abort()
            return
        conn = Connection(self, number, peer, f"{host}:{port}")
        self.connections.add(conn)
        try:
            await conn.run((reader, writer), broker)
        except Exception as error:
            report(error, number)
        finally:
            conn.close("connection failed")
            self.connections.discard(conn)

    async def control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One control client: its commands answered in order, and every event as it happens."""
        self.events.listen(writer)
        try:
            while line := await reader.readline():
                if not line.strip():
                    continue
                writer.write((json.dumps(self.command(line), sort_keys=True) + "\n").encode("utf-8"))
                await writer.drain()
        except (ConnectionError, OSError, ValueError):
            pass
        finally:
            self.events.forget(writer)
            writer.close()

    def command(self, line: bytes) -> dict[str, Any]:
        """The answer to one control line; a bad command is answered, never raised."""
        try:
            command = json.loads(line)
        except ValueError as error:
            return {"ok": False, "error": f"not a JSON line: {error}"}
        if not isinstance(command, dict):
            return {"ok": False, "error": f"a command is a JSON object, got {command!r}"}
        op = command.get("op")
        try:
            if op == "rule":
                return self._add(command)
            if op == "release_all":
                released = sum(self._release(rule) for rule in list(self.rules.values()))
                return {"ok": True, "released": released}
            if op == "status":
                held = [request.describe() for rule in self.rules.values() for request in rule.held]
                rules = [rule.describe() for rule in self.rules.values()]
                return {"ok": True, "rules": rules, "held": held, "connections": len(self.connections)}
            if op in ("release", "remove"):
                rule = self._named(command)
                if op == "release":
                    return {"ok": True, "released": self._release(rule)}
                rule.active = False
                if not rule.held:
                    del self.rules[rule.rule_id]
                return {"ok": True, "holding": len(rule.held)}
        except RuleError as error:
            return {"ok": False, "error": str(error)}
        return {"ok": False, "error": f"op must be one of {', '.join(OPS)}, got {op!r}"}

    def _add(self, command: dict[str, Any]) -> dict[str, Any]:
        rule = parse_rule(command)
        old = self.rules.get(rule.rule_id)
        if old is not None and (old.active or old.held):
            raise RuleError(f"rule {rule.rule_id!r} exists; remove it and release what it holds first")
        self.rules[rule.rule_id] = rule
        return {"ok": True, **rule.describe()}

    def _named(self, command: dict[str, Any]) -> Rule:
        rule = self.rules.get(command.get("rule"))  # type: ignore[arg-type]
        if rule is None:
            known = ", ".join(self.rules) or "none"
            raise RuleError(f"rule must name a rule the proxy has ({known}), got {command.get('rule')!r}")
        return rule

    def _release(self, rule: Rule) -> int:
        released = sum(request.release("control") for request in list(rule.held))
        if not rule.active and not rule.held:
            del self.rules[rule.rule_id]
        return released


def address(text: str) -> tuple[str, int]:
    """HOST:PORT as argparse reads it; the error names what was wrong."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with PORT 0-65535, got {text!r}")
    return host, int(port)


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="request_proxy", description=__doc__.split("\n")[0])
    parser.add_argument("--listen", type=address, required=True, help="HOST:PORT the clients connect to")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--upstream", type=address, help="HOST:PORT every connection goes to")
    where.add_argument("--redirected", action="store_true", help="each connection's SO_ORIGINAL_DST")
    parser.add_argument("--control", type=address, required=True, help="HOST:PORT of the control protocol")
    parser.add_argument("--events", type=Path, help="JSON-lines file every event is appended to")
    parser.add_argument(
        "--answer-timeout", type=float, default=30.0, help="seconds to wait for an answer nobody will read"
    )
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> int:
    events = EventLog(args.events)
    proxy = Proxy(events, args.upstream, args.answer_timeout)
    kafka = await asyncio.start_server(proxy.client, *args.listen, reuse_address=True)
    control = await asyncio.start_server(proxy.control, *args.control, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    bound = {
        "listen": "{}:{}".format(*kafka.sockets[0].getsockname()[:2]),
        "control": "{}:{}".format(*control.sockets[0].getsockname()[:2]),
    }
    print(json.dumps(bound), flush=True)
    try:
        await stop.wait()
    finally:
        kafka.close()
        control.close()
        for conn in list(proxy.connections):
            conn.close("proxy stopped")
        events.emit("stopped")
        events.close()
    return 0


def main(argv: list[str]) -> int:
    return asyncio.run(serve(arguments(argv)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
