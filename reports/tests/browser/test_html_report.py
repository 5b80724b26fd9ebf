#!/usr/bin/python3
"""The HTML conformance report in a real browser (ctest label `browser`).

Writes the sample report's page (html_report_sample), opens it from disk in
Debian's headless Chromium with every network path closed, and checks what a
reader does: the matrix, its legend and one square per entry are there; a
click on a square that does not conform shows that entry's replay line and
draws its run's timeline with its fault; the keyboard selects too; nothing
is logged as an error and no request leaves the page. Saves a screenshot in
the build tree and prints its path.

Exit 77 (ctest: skipped) when chromium, chromedriver or python3-selenium is
missing; Debian: apt-get install chromium chromium-driver python3-selenium.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def page_data(html):
    """The JSON block the page's script reads, as the writer embedded it."""
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert match, "no report-data block in the page"
    return json.loads(match.group(1))


class Check:
    """Counts failed expectations, so that one run reports them all."""

    def __init__(self):
        self.failures = 0

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", required=True, help="the html_report_sample program")
    parser.add_argument("--out-dir", required=True, help="where the page and the screenshot go")
    args = parser.parse_args()

    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            skip(f"no {path} (Debian package {package})")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
    except ImportError:
        skip("no selenium module for this python3 (Debian package python3-selenium)")

    os.makedirs(args.out_dir, exist_ok=True)
    page = os.path.abspath(os.path.join(args.out_dir, "report-sample.html"))
    screenshot = os.path.abspath(os.path.join(args.out_dir, "report-screenshot.png"))
    subprocess.run([args.sample, page], check=True)
    with open(page, encoding="utf-8") as f:
        data = page_data(f.read())
    entries = data["entries"]
    page_url = "file://" + page

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="verbfault-chromium-")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
        f"--user-data-dir={profile}",
        # No network: a proxy that is not there, and no name resolves.
        "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
        # And no traffic of the browser's own.
        "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--disable-extensions", "--metrics-recording-only",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=CHROMEDRIVER)

    check = Check()
    driver = webdriver.Chrome(service=service, options=options)
    try:
        # The viewport, exactly: 1280x800 whatever the window's frame.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        # Errors the page throws, caught before its own script runs.
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": (
            "window.__errors = [];"
            "addEventListener('error', e => __errors.push(String(e.message)));"
            "addEventListener('unhandledrejection', e => __errors.push(String(e.reason)));")})
        # What the browser loaded before the page (its own start page) is not
        # the page's doing: read and drop it.
        driver.get_log("performance")
        driver.get(page_url)

        squares = driver.find_elements(By.CSS_SELECTOR, "svg.matrix .sq")
        check(len(driver.find_elements(By.CSS_SELECTOR, "svg.matrix")) == 1, "the matrix is drawn")
        check(len(driver.find_elements(By.CSS_SELECTOR, "ul.legend li")) == 3,
              "the legend names the three verdicts")
        check(sorted(int(s.get_attribute("data-entry")) for s in squares) == list(range(len(entries))),
              f"one square per entry ({len(squares)} squares, {len(entries)} entries)")

        failing = [i for i, e in enumerate(entries) if e["verdict"] == "does_not_conform"]
        shown = lambda: driver.find_element(By.CSS_SELECTOR, "#detail .replay-line").get_property("textContent")
        check(shown() == entries[failing[0]]["replay"], "the first failure is shown from the start")

        # A real click (WebDriver element click) on another failure's square.
        target = failing[-1]
        square = driver.find_element(By.CSS_SELECTOR, f'svg.matrix .sq[data-entry="{target}"]')
        square.click()
        check(shown() == entries[target]["replay"],
              f"a click on entry {target}'s square shows its replay line")
        marks = driver.find_elements(By.CSS_SELECTOR, "#detail .timeline svg .mark")
        fault_marks = driver.find_elements(By.CSS_SELECTOR, "#detail .timeline svg .mark.mk-fault")
        check(len(marks) == len(entries[target]["timeline"]["marks"]) and len(fault_marks) >= 1,
              f"its timeline is drawn ({len(marks)} marks, {len(fault_marks)} fault)")
        titles = [m.find_element(By.TAG_NAME, "title").get_property("textContent") for m in fault_marks]
        check(all(t.strip() for t in titles), "each fault mark has a tooltip")
        check(square.get_attribute("aria-pressed") == "true", "the square shows it is selected")

        # The keyboard: Tab reaches the matrix's stop (a failure), arrows move, Enter selects.
        driver.get(page_url)
        active = None
        for _ in range(40):
            ActionChains(driver).send_keys(Keys.TAB).perform()
            active = driver.switch_to.active_element
            if "sq" in (active.get_attribute("class") or "").split():
                break
        check(active is not None and active.get_attribute("data-entry") == str(failing[0]),
              "Tab reaches the matrix at its first failure")
        ActionChains(driver).send_keys(Keys.ARROW_RIGHT).perform()
        moved = driver.switch_to.active_element
        moved_entry = int(moved.get_attribute("data-entry") or -1)
        ActionChains(driver).send_keys(Keys.ENTER).perform()
        check(moved_entry != failing[0] and shown() == entries[moved_entry]["replay"],
              f"ArrowRight then Enter selects the next square (entry {moved_entry})")
        ActionChains(driver).send_keys(Keys.ARROW_DOWN, Keys.SPACE).perform()
        below = int(driver.switch_to.active_element.get_attribute("data-entry") or -1)
        check(entries[below]["fault_class"] != entries[moved_entry]["fault_class"]
              and shown() == entries[below]["replay"],
              f"ArrowDown then Space selects a square of the next class (entry {below})")

        # The table of failures selects too.
        driver.find_element(By.CSS_SELECTOR, f'.failures button[data-entry="{target}"]').click()
        check(shown() == entries[target]["replay"], "a row of the failures table selects its entry")
        driver.find_element(By.CSS_SELECTOR, "#detail button.copy").click()

        # A run listed under a race window selects its entry, whose facts
        # name the windows it reached.
        reached = next(i for i, e in enumerate(entries) if e["windows"])
        driver.find_element(By.CSS_SELECTOR, f'.windows button[data-entry="{reached}"]').click()
        facts = driver.find_element(By.CSS_SELECTOR, "#detail dl.facts").text
        check(shown() == entries[reached]["replay"] and entries[reached]["windows"][0] in facts,
              "a run of the race windows table selects its entry and shows its windows")

        # The page as a reader first sees it, with the crash selected.
        driver.get(page_url)
        crash = next(i for i, e in enumerate(entries) if e["outcome"] == "crash")
        driver.find_element(By.CSS_SELECTOR, f'svg.matrix .sq[data-entry="{crash}"]').click()
        driver.execute_script("window.scrollTo(0, 0); document.activeElement.blur();")
        driver.save_screenshot(screenshot)

        errors = driver.execute_script("return window.__errors;")
        check(errors == [], f"no JavaScript error ({errors})")
        logged = [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
        check(logged == [], f"no error in the console ({logged})")
        requests = set()
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requests.add(message["params"]["request"]["url"])
        check(requests == {page_url}, f"no request but the page itself ({sorted(requests)})")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)

    print(f"screenshot: {screenshot}")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
