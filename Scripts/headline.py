#!/usr/bin/env python3
"""The README's table of headline results, taken from Benchmarks/RESULTS.md.

Usage: Scripts/headline.py --write   rewrites the table between the README's markers
       Scripts/headline.py           checks that the README's table is what RESULTS.md gives
A figure RESULTS.md does not hold (a section left out of a run) is an error, never a guess."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "Benchmarks" / "RESULTS.md"
BEGIN = "<!-- headline results: Scripts/headline.py --write fills this from RESULTS.md -->"
END = "<!-- end of the headline results -->"


class Missing(Exception):
    pass


def section(text: str, title: str) -> str:
    match = re.search(rf"^## \d+\. {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        raise Missing(f'no section "{title}"')
    return match.group(1)


def find(text: str, pattern: str, what: str) -> str:
    match = re.search(pattern, text, re.M)
    if not match:
        raise Missing(what)
    return match.group(1)


def cells(text: str, first: str, what: str) -> list[str]:
    row = find(text, rf"^(\| {re.escape(first)} \|.*)$", what)
    return [cell.strip() for cell in row.strip("|").split("|")]


def rows(results: str) -> list[str]:
    ours = "SharedMirror `.broker`, its value `@JSONCodable`"
    forwarder = "raw libzmq, forwarder process answering each message"
    codable = "the same, its value through Codable (`JSONEncoder`, `JSONDecoder`)"
    latency = section(results, "Latency, 1 reader")
    cpu = section(results, "CPU per write, 1 reader")
    contention = section(results, "Contention, 40,000 `withLock` increments")
    durability = section(results, "Durability cost")
    failover = section(results, "Fail-over")
    cas = section(results, "Compare-and-set from Python, against Redis")
    clients = section(results, "Thousands of clients on one broker")

    def against(text: str, baseline: str, figure: str) -> str:
        return find(text, rf"^Against {re.escape(baseline)}: {figure} \*\*([\d.]+×)\*\*",
                    f"{figure} against {baseline}")

    p50 = cells(latency, ours, "latency row")[1]
    total = cells(cpu, ours, "CPU row")[4]
    exact = find(contention, r"Every result exactly 40,000: \*\*(\w+)\*\*", "exactness")
    ratio = find(contention, r"Ratio 4 writers / 1 writer: \*\*([\d.]+×)\*\*", "contention ratio")
    data = cells(durability, "`--data` (log appended before each ACK)", "durability row")[1]
    data_ratio = find(durability, r"^With `--data`: \*\*([\d.]+×)\*\*", "durability ratio")
    failover_p50 = find(failover, r"^\| p50 \|.*\n\|[-:|]+\n\| ([\d.]+ ms) \|", "fail-over p50")
    cas_rate = cells(cas, "SharedMirror broker (WRITE against a version; REJECT carries the value)",
                     "compare-and-set row")[1]
    cas_ratio = find(cas, r"^Ratio to Redis: \*\*([\d.]+×)\*\*", "Redis ratio")
    largest = cells(clients, "8000", "8000 clients row")[2]
    clients_p50, clients_ratio = re.match(r"([\d.]+) / [\d.]+ \(\*\*([\d.]+×)\*\*", largest).groups()
    return [
        "| measure | SharedMirror | against |",
        "|---|---:|---|",
        f"| propagation to 1 reader, p50 | {p50} µs | {against(latency, forwarder, 'p50')} raw "
        f"libzmq through a forwarder process; {against(latency, codable, 'p50')} the same with its "
        "writer subscribed and the value through Codable |",
        f"| CPU per write (writer, broker and reader), 1 reader | {total} µs | "
        f"{against(cpu, forwarder, 'total')} raw libzmq through a forwarder process; "
        f"{against(cpu, codable, 'total')} the same with its writer subscribed and Codable |",
        f"| 4 counters × 10,000 increments | exactly 40,000 every run: {exact} | {ratio} the time "
        "of 1 counter × 40,000 |",
        f"| confirmed writes with `--data` | {data} writes/s | {data_ratio} the broker in memory |",
        f"| fail-over after a broker SIGKILL, p50 | {failover_p50} | until a write is confirmed "
        "through the other broker |",
        f"| compare-and-set from Python | {cas_rate} increments/s | {cas_ratio} Redis "
        "(WATCH/MULTI), the median of the runs' ratios |",
        f"| a write reaching 8000 clients, p50 | {clients_p50} ms | {clients_ratio} a raw libzmq "
        "forwarder holding as many connections |",
    ]


def main() -> int:
    readme = README.read_text(encoding="utf-8")
    if BEGIN not in readme or END not in readme:
        print(f"headline: README.md lacks the markers {BEGIN} … {END}")
        return 1
    try:
        table = "\n".join([BEGIN, *rows(RESULTS.read_text(encoding="utf-8")), END])
    except Missing as missing:
        print(f"headline: RESULTS.md lacks a figure the README shows: {missing}")
        return 1
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    if sys.argv[1:] == ["--write"]:
        README.write_text(readme[:start] + table + readme[end:], encoding="utf-8")
        return 0
    if readme[start:end] != table:
        print("headline: README.md's results differ from RESULTS.md; run Scripts/headline.py --write")
        return 1
    print("headline: README.md's results are RESULTS.md's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
