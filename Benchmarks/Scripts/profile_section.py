#!/usr/bin/env python3
"""Writes PROFILING.md's "Where a write's time goes" from the last `callgrind.sh` run: the
instructions per write of each thread, and the functions that spend the most of them (their
own instructions, not their callees'), with the commit and machine they were measured on.
Usage: profile_section.py CALLGRIND_DIR PROFILING_MD COMMAND"""
import datetime
import os
import re
import subprocess
import sys

BEGIN = "<!-- make profile writes this section: do not edit it by hand. -->"
END = "<!-- end of the section make profile writes -->"
TOP = 8


def run(*command: str, stdin: str | None = None) -> str:
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, check=True
    ).stdout


LINE = re.compile(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+(.*?):(.*) \[(.*)\]$")


def functions(profile: str, inclusive: bool) -> list[tuple[int, float, str, str]]:
    """Each function's instructions (with its callees' when `inclusive`), its share of the
    thread, its name and the file it was loaded from."""
    annotated = run("swift", "demangle", "--simplified", stdin=run(
        "callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
        profile))
    rows = []
    for line in annotated.splitlines():
        match = LINE.match(line)
        if match:
            count, share, _, function, binary = match.groups()
            rows.append((int(count.replace(",", "")), float(share), function.strip(), binary))
    return rows


def short(name: str) -> str:
    return name if len(name) <= 80 else name[:77] + "..."


def tables(role: str, name: str, profile: str, writes: int) -> list[str]:
    """The thread's own functions that take the most with their callees, and the functions
    that spend the most instructions themselves (the runtime's included), per write."""
    ours = [row for row in functions(profile, inclusive=True)
            if row[3].endswith("/peer") and row[1] < 90]
    # Zeroing the counters mid-run leaves each frame that was on the stack then (the thread's
    # entry down to its loop) with all of the thread's instructions as its own.
    own = [row for row in functions(profile, inclusive=False) if row[1] < 90]
    lines = ["", f"The {role}'s {name}: SharedMirror's functions with what they call, and the "
             "functions that spend the most themselves, per write:", "",
             "| with callees | function | | itself | function |", "|---:|---|---|---:|---|"]
    for left, right in zip(ours[:TOP], own[:TOP]):
        lines.append(f"| {left[0] // writes:,} | `{short(left[2])}` | | {right[0] // writes:,} | "
                     f"`{short(right[2])}` ({os.path.basename(right[3])}) |")
    return lines


def machine() -> str:
    cores = os.cpu_count()
    model = ""
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{cores} cores ({model}), Linux {os.uname().release}"


def main() -> int:
    directory, document, command = sys.argv[1:4]
    with open(os.path.join(directory, "summary.tsv")) as summary:
        threads = [line.rstrip("\n").split("\t") for line in summary if line.strip()]
    measured = datetime.datetime.fromtimestamp(
        os.path.getmtime(os.path.join(directory, "summary.tsv")), datetime.timezone.utc)
    commit = run("git", "rev-parse", "--short=12", "HEAD").strip()
    # The code measured: the package's sources and the peer's.
    changed = run("git", "status", "--porcelain", "--untracked-files=no", "--", "Sources",
                  "Benchmarks/Sources/callgrind-peer").strip()
    dirty = " (with uncommitted changes to the code)" if changed else ""
    lines = [
        BEGIN,
        "",
        f"- **Commit:** `{commit}`{dirty}",
        f"- **Date:** {measured:%Y-%m-%dT%H:%M:%SZ} (end of the run)",
        f"- **Machine:** {machine()}",
        f"- **Command:** `{command}`: one writer, one reader and the broker, each under callgrind"
        " in turn, writes paced 5 ms apart, counted after 100 that warm the peers up",
        "",
        "| peer | thread | instructions per write |",
        "|---|---|---:|",
    ]
    for role, name, per_write, writes, _, seen in threads:
        # A reader that fell behind took several updates per notification, and did less work
        # per write: its figure compares only with a run at about the same count.
        told = f" ({int(seen):,} notifications for {int(writes):,} writes)" if seen else ""
        lines.append(f"| {role} | {name}{told} | {int(per_write):,} |")
    for role, name, _, writes, profile, _ in threads:
        # The writer's main thread is counted from its calls of withLock, whose callees its
        # start-up would swamp; libzmq's threads have no symbols.
        if name.startswith("client") or name.startswith("broker"):
            lines += tables(role, name, profile, int(writes))
    lines += ["", END]
    with open(document) as file:
        text = file.read()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    with open(document, "w") as file:
        file.write(text[:start] + "\n".join(lines) + text[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
