"""What the request proxy costs a connection no rule touches: small framed requests on loopback, straight to
a fake broker against through the proxy.

    flock /tmp/kchaos-cluster.lock .venv/bin/python -m bench.request_proxy [--requests 200000] [--rounds 3]

The issue's goal is a run with the proxy at 0.9x or better of the same run without it. A cluster run's rate
is bounded by its brokers and clients, so this measures the proxy where nothing else bounds it: one client
connection keeps `--window` requests of `--size` bytes in flight to a fake broker (a subprocess that
answers each with a small response, parsing frames in bulk), first directly, then through the proxy (a
subprocess, started as a node's sidecar would start it, no rule set), alternately in each round so the
machine's drift falls on both. Reported: the median rate of each side and the median of the rounds'
ratios. It is a floor: a real run spends most of its time elsewhere, so its ratio is nearer 1.

Run it while nothing else runs: two cores carry the client, the fake broker and the proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.sections import write_json_section, write_markdown_section

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
SECTION = "request-proxy"
PROXY = "kchaos.compose.proxy.request_proxy"


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers every complete frame in what arrived with one write: the fake broker must not be the
    bottleneck it measures."""
    buffered = b""
    while chunk := await reader.read(1 << 18):
        buffered += chunk
        answers, offset = [], 0
        while len(buffered) - offset >= 4:
            (size,) = struct.unpack_from(">i", buffered, offset)
            if len(buffered) - offset - 4 < size:
                break
            (correlation_id,) = struct.unpack_from(">i", buffered, offset + 8)
            answers.append(struct.pack(">iiih", 10, correlation_id, 0, 0))
            offset += 4 + size
        buffered = buffered[offset:]
        writer.write(b"".join(answers))
        await writer.drain()
    writer.close()


async def serve() -> None:
    server = await asyncio.start_server(_serve_connection, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


def _frame(correlation_id: int, size: int) -> bytes:
    header = struct.pack(">hhih", 0, 9, correlation_id, 10) + b"producer-0"
    body = header + b"x" * max(0, size - len(header))
    return struct.pack(">i", len(body)) + body


async def push(port: int, requests: int, size: int, window: int) -> float:
    """Requests per second over one connection with `window` in flight, every answer read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    batch = b"".join(_frame(n, size) for n in range(window))
    answer_size = 4 + 10
    started = time.perf_counter()
    sent = 0
    while sent < requests:
        count = min(window, requests - sent)
        writer.write(batch if count == window else batch[: count * len(batch) // window])
        await writer.drain()
        await reader.readexactly(count * answer_size)
        sent += count
    elapsed = time.perf_counter() - started
    writer.close()
    return requests / elapsed


def _start(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def measure(requests: int, size: int, window: int, rounds: int) -> dict[str, Any]:
    broker, port = _start([sys.executable, "-m", "bench.request_proxy", "--serve"])
    loopback = ("--listen", "127.0.0.1:0", "--control", "127.0.0.1:0")
    proxy, bound = _start([sys.executable, "-m", PROXY, *loopback, "--upstream", f"127.0.0.1:{port}"])
    through = int(json.loads(bound)["listen"].rsplit(":", 1)[1])
    direct_rates, proxied_rates, ratios = [], [], []
    try:
        for _ in range(rounds):
            direct = asyncio.run(push(int(port), requests, size, window))
            proxied = asyncio.run(push(through, requests, size, window))
            direct_rates.append(direct)
            proxied_rates.append(proxied)
            ratios.append(proxied / direct)
    finally:
        for process in (proxy, broker):
            process.terminate()
            process.wait(timeout=10)
    return {
        "requests": requests,
        "size": size,
        "window": window,
        "rounds": rounds,
        "direct_per_s": statistics.median(direct_rates),
        "proxied_per_s": statistics.median(proxied_rates),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
    }


def markdown(report: dict[str, Any]) -> str:
    ratios = ", ".join(f"{ratio:.2f}" for ratio in report["ratios"])
    return (
        "## The request proxy, no rule set\n\n"
        f"{report['requests']:,} requests of {report['size']} bytes, {report['window']} in flight on one "
        f"connection, {report['rounds']} rounds (`python -m bench.request_proxy`):\n\n"
        "| side | requests/s (median) |\n|---|---|\n"
        f"| straight to the fake broker | {report['direct_per_s']:,.0f} |\n"
        f"| through the proxy | {report['proxied_per_s']:,.0f} |\n\n"
        f"Ratio through/straight: **{report['ratio']:.2f}** (rounds: {ratios}).\n"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_proxy", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="bytes of each request after its size")
    parser.add_argument("--window", type=int, default=500, help="requests in flight")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md as it is")
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve())
        return 0
    for name in ("requests", "size", "window", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    report = measure(args.requests, args.size, args.window, args.rounds)
    text = markdown(report)
    print(text)
    if not args.no_write:
        write_markdown_section(BENCH_DIR / "RESULTS.md", SECTION, text)
        write_json_section(BENCH_DIR / "results.json", SECTION, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
