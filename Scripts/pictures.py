#!/usr/bin/python3
"""Takes the pictures for the docs in headless Chromium; Scripts/pictures.sh runs it.

Usage:
  pictures.py terminals OUT LABEL FILE [LABEL FILE ...]
      Draws each FILE (a pane's `tmux capture-pane -e -p`: text with SGR colors and bold)
      side by side in a dark terminal look, LABEL above it, and screenshots that as OUT.
  pictures.py web URL TAPS EXPECTED OUT
      Opens the page at URL, taps + TAPS times (1.2 s apart), waits until it shows EXPECTED with nothing
      pending and the inspector has charted the writes, and screenshots it as OUT.
Exits 1 if what it waits for does not show within 30 s.
"""
import html
import os
import re
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from browser_check import wait_until

# The 16 ANSI colors (a dark theme: Tango-like, brightened for the dark background).
PALETTE = ["#2e3436", "#ef5350", "#8ae234", "#fce94f", "#729fcf", "#ad7fa8", "#34e2e2", "#d3d7cf",
           "#555753", "#ff6e67", "#b5f56e", "#fffb83", "#9ec5ff", "#d6a6d1", "#7ff7f7", "#eeeeec"]
FOREGROUND, BACKGROUND = "#d8dee9", "#1e2127"


def color256(n):
    if n < 16:
        return PALETTE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    level = 8 + 10 * (n - 232)
    return "#%02x%02x%02x" % (level, level, level)


def ansi_to_html(text):
    """The text as HTML spans: SGR foreground and background colors (16, 256, true color),
    bold and reverse; other escape sequences are dropped."""
    out, fg, bg, bold, reverse = [], None, None, False, False
    for part in re.split(r"(\x1b\[[0-9;:?]*[A-Za-z])", text):
        if not part.startswith("\x1b"):
            if part:
                style = []
                f, b = (bg or BACKGROUND, fg or FOREGROUND) if reverse else (fg, bg)
                if f:
                    style.append("color:" + f)
                if b:
                    style.append("background:" + b)
                if bold:
                    style.append("font-weight:bold")
                escaped = html.escape(part)
                out.append(f'<span style="{";".join(style)}">{escaped}</span>' if style else escaped)
            continue
        if not part.endswith("m"):
            continue
        codes = [int(c) if c.isdigit() else 0 for c in re.split("[;:]", part[2:-1])]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg, bg, bold, reverse = None, None, False, False
            elif c == 1:
                bold = True
            elif c == 22:
                bold = False
            elif c == 7:
                reverse = True
            elif c == 27:
                reverse = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                fg = PALETTE[c - 30 if c < 90 else c - 82]
            elif 40 <= c <= 47 or 100 <= c <= 107:
                bg = PALETTE[c - 40 if c < 100 else c - 92]
            elif c == 39:
                fg = None
            elif c == 49:
                bg = None
            elif c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    value, i = color256(codes[i + 2]), i + 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    value, i = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5]), i + 4
                else:
                    value = None
                if c == 38:
                    fg = value
                else:
                    bg = value
            i += 1
    return "".join(out)


PAGE = """<!doctype html>
<meta charset="utf-8">
<style>
  body { margin: 0; background: #fff; font-family: "DejaVu Sans", sans-serif; }
  #shot { display: inline-flex; gap: 16px; padding: 16px; background: #f4f4f6; }
  .pane { display: flex; flex-direction: column; gap: 6px; }
  .label { font-size: 14px; font-weight: bold; color: #444; padding-left: 4px; }
  pre { margin: 0; padding: 12px 14px; background: %s; color: %s; border-radius: 8px;
        font: 15px/1.35 "DejaVu Sans Mono", "Liberation Mono", monospace; }
</style>
<div id="shot">%s</div>
"""


def browser(width, height):
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                     f"--window-size={width},{height}"]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def terminals(out, panes):
    texts = []
    for label, path in panes:
        with open(path, encoding="utf-8") as file:
            texts.append((label, file.read().rstrip("\n").split("\n")))
    # Every pane as tall as the tallest's last line of text, plus one blank line.
    plain = lambda line: re.sub(r"\x1b\[[0-9;:?]*[A-Za-z]", "", line).rstrip()
    height = 1 + max(max((i + 1 for i, line in enumerate(lines) if plain(line)), default=0)
                     for _, lines in texts)
    width = max(len(plain(line)) for _, lines in texts for line in lines)
    body = "".join(
        f'<div class="pane"><div class="label">{html.escape(label)}</div>'
        f'<pre>{ansi_to_html(chr(10).join((lines + [""] * height)[:height]))}</pre></div>'
        for label, lines in texts)
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8") as page:
        page.write(PAGE % (BACKGROUND, FOREGROUND, body))
    driver = browser(2400, 1200)
    try:
        driver.get("file://" + page.name)
        shot = driver.find_element(By.ID, "shot")
        # Pre lines are as wide as their text: pad every pane to the widest line's width.
        driver.execute_script(
            "for (const pre of document.querySelectorAll('pre')) pre.style.width = arguments[0] + 'ch';",
            width + 2)
        shot.screenshot(out)
    finally:
        driver.quit()
        os.unlink(page.name)
    return 0


def samples(driver):
    """How many samples the inspector's chart shows."""
    return driver.execute_script(
        "const line = document.querySelector('#inspect-chart polyline');"
        "return line ? line.getAttribute('points').trim().split(/\\s+/).length - 2 : 0")


def web(url, taps, expected, out):
    driver = browser(1280, 800)
    try:
        driver.get(url)
        text = lambda name: driver.find_element(By.ID, name).text
        if not wait_until(lambda: text("connection") == "connected", 30):
            print("pictures.py: the page did not connect: " + text("connection"), file=sys.stderr)
            return 1
        # A tap every 1.2 s, so that the chart of writes per second (a sample a second) shows
        # each; then the sample after the last.
        for index in range(taps):
            if index:
                time.sleep(1.2)
            driver.find_element(By.ID, "increment").click()
        after = samples(driver) + 1
        if not wait_until(lambda: text("count") == expected
                          and driver.execute_script("return window.sharedMirror.pending") == 0,
                          30):
            print(f"pictures.py: the page shows {text('count')}, not {expected}", file=sys.stderr)
            return 1
        # Once the inspector shows the broker's figures and charts the writes just made.
        if not wait_until(lambda: text("inspect-clients") != "–" and text("inspect-rate") != "–"
                          and samples(driver) >= after, 30):
            print("pictures.py: the inspector shows no figures: " + text("inspect-problem"),
                  file=sys.stderr)
            return 1
        # The window as tall as the page's content (its cards in one row at this width).
        chrome = driver.execute_script("return window.outerHeight - window.innerHeight")
        bottom = driver.execute_script(
            "return Math.max(...Array.from(document.body.children,"
            " e => e.getBoundingClientRect().bottom))")
        driver.set_window_size(1280, int(bottom) + 40 + chrome)
        time.sleep(0.2)
        driver.save_screenshot(out)
    finally:
        driver.quit()
    return 0


def main(arguments):
    if len(arguments) >= 4 and arguments[0] == "terminals" and len(arguments) % 2 == 0:
        return terminals(arguments[1], list(zip(arguments[2::2], arguments[3::2])))
    if len(arguments) == 5 and arguments[0] == "web":
        return web(arguments[1], int(arguments[2]), arguments[3], arguments[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
