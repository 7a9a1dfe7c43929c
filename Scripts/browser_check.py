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
"""
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
    cells = driver.find_elements(By.CSS_SELECTOR, "#inspect-table td")
    say(f"inspector clients={text('inspect-clients')} keys={text('inspect-keys')} "
        f"version={cells[1].text} rate={text('inspect-rate')} writers={cells[2].text}")
    return 0


def main():
    url, scenario, tabs, taps, expected = sys.argv[1:6]
    screenshot = sys.argv[6] if len(sys.argv) > 6 else None
    tabs, taps = int(tabs), int(taps)
    drivers = [open_tab(url) for _ in range(tabs)]
    try:
        for driver in drivers:
            connected = wait_until(
                lambda: driver.find_element(By.ID, "connection").text == "connected", 30)
            if not connected:
                say("a tab did not connect: " + driver.find_element(By.ID, "connection").text)
                return 1
        say("ready")

        def tap(driver):
            button = driver.find_element(By.ID, "increment")
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
