#!/usr/bin/env python3
"""Checks the relative links of the repository's Markdown files: every file a link names
exists, and every #anchor names a heading of its target (GitHub's slugs). Exits 1 naming each
broken link. Usage: Scripts/check-links.py [FILE.md ...] (default: every tracked *.md)."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading: str) -> str:
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced, seen = set(), False, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            base = slug(line.lstrip("#"))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path):
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z]+:", target):
                yield number, target


def main() -> int:
    files = [Path(a).resolve() for a in sys.argv[1:]] or [
        ROOT / name
        for name in subprocess.run(
            ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        if "/Documentation.docc/" not in name
    ]
    broken = []
    for source in files:
        for number, target in links(source):
            file_part, _, anchor = target.partition("#")
            destination = (source.parent / file_part).resolve() if file_part else source
            shown = source.relative_to(ROOT) if source.is_relative_to(ROOT) else source
            where = f"{shown}:{number}: {target}"
            if not destination.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                broken.append(f"{where} (no heading #{anchor})")
    for line in broken:
        print(line)
    print(f"links: {len(files)} files, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
