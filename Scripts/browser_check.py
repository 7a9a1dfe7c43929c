#!/usr/bin/python3
"""Drives the web front's page in headless Chromium, as a user's tabs would.

Usage: browser_check.py URL SCENARIO TABS TAPS EXPECTED [SCREENSHOT]
  SCENARIO "taps":   TABS tabs tap + TAPS times each, all at once.
  SCENARIO "slow":   as "taps", one tap every 20 ms (for faults injected meanwhile).
  SCENARIO "inspect": as "taps", then prints the first tab's inspector once it shows the
                     broker's figures and a rate: "inspector clients=N keys=N version=N rate=R
                     writers=W" (W: the writers column).
Prints "ready" once every tab is connected, "tapped N" after each tab's first half of its
taps, then waits until every tab shows EXPECTED with nothing pending and prints one
"tab COUNT PENDING" line per tab; exits 1 if a tab does not get there within 60 s.

For `make bench` (the web front's section):
  browser_check.py URL timed TAPS PACE_MS
      One tab taps TAPS times, PACE_MS apart, timed by the page itself; waits until nothing is
      pending and prints "clock offset O round trip R" (a check of the page's clock against this
      machine's, read in a round trip of R, so right to within R/2; µs), then "taps T1 T2 ..."
      (each tap's time on the page's wall clock, in microseconds: Chromium's
      performance.timeOrigin is this machine's wall clock).
  browser_check.py URL watch TABS EXPECTED
      Opens TABS tabs, prints "ready" once all are connected, "done" once all show EXPECTED.

With a key that may only read the page's key:
  browser_check.py URL refused TAPS EXPECTED
      Opens a tab, waits until it shows EXPECTED, taps + TAPS times, then waits until it shows
      EXPECTED again with nothing pending and prints "refused COUNT PENDING REFUSED PROBLEM"
      (REFUSED: the taps the page counts as refused; PROBLEM: the page's problem line).

With no broker to answer yet:
  browser_check.py URL unsynced EXPECTED
      Opens a tab and prints what it shows before any broker answered: "unsynced STATE COUNT
      PROFILE_COUNT MAX MIN TAPS", then waits until it shows EXPECTED (a broker started
      meanwhile) and prints "tab COUNT PENDING".
"""
import http.server
import sys
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def say(line):
    print(line, flush=True)


def open_tab(url):
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,760"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.get(url)
    return driver


def wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def shown(driver):
    return (driver.find_element(By.ID, "count").text,
            driver.execute_script("return window.sharedMirror.pending"))


def inspector(driver):
    def text(name):
        return driver.find_element(By.ID, name).text

    if not wait_until(lambda: text("inspect-clients") != "–" and text("inspect-rate") != "–", 15):
        say("the inspector shows no figures: " + text("inspect-problem"))
        return 1
    # Read in one call: the page redraws the table as figures arrive, and an element found
    # before a redraw is gone by the time its text is asked for.
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('#inspect-table td'), c => c.innerText)")
    say(f"inspector clients={text('inspect-clients')} keys={text('inspect-keys')} "
        f"version={cells[1]} rate={text('inspect-rate')} writers={cells[2]}")
    return 0


def connected(driver):
    return wait_until(lambda: driver.find_element(By.ID, "connection").text == "connected", 30)


class ClockHandler(http.server.BaseHTTPRequestHandler):
    """Answers any GET with this machine's wall-clock time in microseconds."""

    def do_GET(self):
        body = f"{time.time_ns() / 1e3:.1f}".encode()
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def page_clock_offset(driver):
    """The page's wall clock minus this machine's, and the round trip it was read in (so it is
    right to within half of that), in microseconds: the page asks a clock served here on
    loopback, and the answer with the shortest round trip counts. A check, not a correction:
    loopback fetches take over a millisecond, far more than the clocks differ."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ClockHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        driver.set_script_timeout(30)
        return driver.execute_async_script("""
            const [url, done] = arguments;
            const now = () => (performance.timeOrigin + performance.now()) * 1000;
            (async () => {
              let best = null;
              for (let i = 0; i < 50; i += 1) {
                const before = now();
                const machine = Number(await (await fetch(url, { cache: "no-store" })).text());
                const after = now();
                if (!best || after - before < best[1]) best = [(before + after) / 2 - machine, after - before];
              }
              done(best);
            })();""", f"http://127.0.0.1:{server.server_address[1]}/clock")
    finally:
        server.shutdown()


def timed(url, taps, pace):
    driver = open_tab(url)
    try:
        if not connected(driver):
            say("the tab did not connect")
            return 1
        offset, round_trip = page_clock_offset(driver)
        driver.set_script_timeout(taps * pace / 1000 + 60)
        stamps = driver.execute_async_script("""
            const [taps, pace, done] = arguments;
            const button = document.getElementById("increment");
            const stamps = [];
            const tap = () => {
              stamps.push((performance.timeOrigin + performance.now()) * 1000);
              button.click();
              if (stamps.length < taps) setTimeout(tap, pace); else done(stamps);
            };
            tap();""", taps, pace)
        if not wait_until(lambda: driver.execute_script("return window.sharedMirror.pending") == 0, 60):
            say("taps still pending")
            return 1
        say(f"clock offset {offset:.0f} round trip {round_trip:.0f}")
        say("taps " + " ".join(f"{stamp:.1f}" for stamp in stamps))
        return 0
    finally:
        driver.quit()


def watch(url, tabs, expected):
    drivers = [open_tab(url) for _ in range(tabs)]
    try:
        if not all(connected(driver) for driver in drivers):
            say("a tab did not connect")
            return 1
        say("ready")
        for driver in drivers:
            if not wait_until(lambda: shown(driver)[0] == expected, 120):
                say("a tab shows " + shown(driver)[0])
                return 1
        say("done")
        return 0
    finally:
        for driver in drivers:
            driver.quit()


def unsynced(url, expected):
    driver = open_tab(url)
    try:
        if not wait_until(lambda: driver.execute_script("return window.sharedMirror !== undefined"), 30):
            say("the page did not load")
            return 1
        texts = [driver.find_element(By.ID, name).text
                 for name in ["connection", "count", "profile-count", "max", "min", "taps"]]
        say("unsynced " + " ".join(texts))
        status = 0 if wait_until(lambda: shown(driver) == (expected, 0), 60) else 1
        count, pending = shown(driver)
        say(f"tab {count} {pending}")
        return status
    finally:
        driver.quit()


def refused(url, taps, expected):
    driver = open_tab(url)
    try:
        if not connected(driver) or not wait_until(lambda: shown(driver)[0] == expected, 30):
            say("the tab did not show " + expected + ": " + shown(driver)[0])
            return 1
        button = driver.find_element(By.ID, "increment")
        for _ in range(taps):
            button.click()

        def problem():
            return driver.find_element(By.ID, "problem").text

        status = 0 if wait_until(
            lambda: shown(driver) == (expected, 0) and "read-only" in problem()
            and driver.execute_script("return window.sharedMirror.refused") == taps, 30) else 1
        count, pending = shown(driver)
        refused = driver.execute_script("return window.sharedMirror.refused")
        say(f"refused {count} {pending} {refused} {problem()}")
        return status
    finally:
        driver.quit()


def main():
    if sys.argv[2] == "refused":
        return refused(sys.argv[1], int(sys.argv[3]), sys.argv[4])
    if sys.argv[2] == "unsynced":
        return unsynced(sys.argv[1], sys.argv[3])
    if sys.argv[2] == "timed":
        return timed(sys.argv[1], int(sys.argv[3]), int(sys.argv[4]))
    if sys.argv[2] == "watch":
        return watch(sys.argv[1], int(sys.argv[3]), sys.argv[4])
    url, scenario, tabs, taps, expected = sys.argv[1:6]
    screenshot = sys.argv[6] if len(sys.argv) > 6 else None
    tabs, taps = int(tabs), int(taps)
    drivers = [open_tab(url) for _ in range(tabs)]
    try:
        for driver in drivers:
            if not connected(driver):
                say("a tab did not connect: " + driver.find_element(By.ID, "connection").text)
                return 1
        say("ready")

        def tap(driver):
            button = driver.find_element(By.ID, "increment")
            # Counts the clicks that reach the button, so that a click lost on the way (the
            # page moved under it) is told apart from a tap the protocol lost.
            driver.execute_script(
                "window.clicksReceived = 0;"
                "arguments[0].addEventListener('click', () => window.clicksReceived++);", button)
            for index in range(taps):
                button.click()
                if index + 1 == taps // 2:
                    say(f"tapped {index + 1}")
                if scenario == "slow":
                    time.sleep(0.02)

        threads = [threading.Thread(target=tap, args=(driver,)) for driver in drivers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        status = 0
        for driver in drivers:
            received = driver.execute_script("return window.clicksReceived")
            if received != taps:
                say(f"only {received} of the {taps} clicks reached the button")
                status = 1
            if not wait_until(lambda: shown(driver) == (expected, 0), 60):
                status = 1
            count, pending = shown(driver)
            say(f"tab {count} {pending}")
        if scenario == "inspect":
            status = max(status, inspector(drivers[0]))
        if screenshot:
            # Once the inspector charts the writes just made.
            wait_until(lambda: drivers[0].find_elements(By.CSS_SELECTOR, "#inspect-chart polyline"), 10)
            drivers[0].save_screenshot(screenshot)
        return status
    finally:
        for driver in drivers:
            driver.quit()


if __name__ == "__main__":
    sys.exit(main())
