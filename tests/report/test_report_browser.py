"""The report in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, ``.ci/browser_setup.sh``) driven by Selenium opens the file from disk."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.html import build_report

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium (dev extra)")
    from selenium.webdriver.chrome.service import Service

    for path, package in ((CHROMIUM, "chromium"), (DRIVER, "chromium-driver")):
        if not Path(path).is_file():
            pytest.skip(f"{path} missing: apt-get install -y {package} (.ci/browser_setup.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1800", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def _console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_report_renders_and_filters_in_headless_chromium(scenario_run, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    report = build_report([scenario_run], tmp_path / "report.html")
    browser.get(report.resolve().as_uri())
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#capsule-rows tr"))
    assert _console_errors(browser) == []

    # The headline shows each number's n and interval, and whether the gain is beyond noise.
    headline = browser.find_element(By.ID, "headline").text
    assert "n=4, 95 % CI 0.51–1.00" in headline
    assert "4 tasks, 95 % CI [-0.33, -0.33]: beyond noise" in headline

    # Every chart drew something, with a real size on the page.
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    kinds = {c.get_attribute("data-chart") for c in charts}
    assert {"pass", "bank", "tokens", "timeline"} <= kinds
    for svg in charts:
        assert svg.size["width"] > 100 and svg.size["height"] > 50
        assert browser.execute_script("return arguments[0].childElementCount", svg) > 5
    drawn = browser.execute_script(
        "return document.querySelectorAll('svg[data-chart=pass] circle').length")
    assert drawn == 8  # eval and train, 4 rounds each

    with EvidenceStore(scenario_run).connect() as con:
        total, evals = con.execute("SELECT count(*), count_if(split = 'eval') FROM capsule"
                                   ).fetchone()

    def shown() -> str:
        return browser.find_element(By.ID, "capsule-count").text

    assert shown().startswith(f"{total} capsule(s) match")
    # The Critic column shows each verdict's failure pattern, its attribution beside it.
    with EvidenceStore(scenario_run).connect() as con:
        verdicts = {f"{p} ({a})" for p, a in con.execute(
            "SELECT pattern, attribution FROM verdict").fetchall()}
    critic = {r.find_elements(By.TAG_NAME, "td")[-1].text
              for r in browser.find_elements(By.CSS_SELECTOR, "#capsule-rows tr")}
    assert critic - {""} and critic - {""} <= verdicts
    Select(browser.find_element(By.ID, "f-split")).select_by_value("eval")
    wait.until(lambda d: shown().startswith(f"{evals} capsule(s) match"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#capsule-rows tr")
    assert len(rows) == evals and evals < total
    assert {r.find_elements(By.TAG_NAME, "td")[2].text for r in rows} == {"eval"}
    Select(browser.find_element(By.ID, "f-round")).select_by_value("3")
    wait.until(lambda d: shown().startswith("4 capsule(s) match"))  # round 3's 4 eval tasks

    # A capsule opens its texts; a skill row opens its YAML and filters the browser to it.
    browser.find_element(By.CSS_SELECTOR, "#capsule-rows tr").click()
    detail = browser.find_element(By.ID, "capsule-detail")
    assert detail.is_displayed() and "Model output" in detail.text and "Grader trace" in detail.text
    browser.find_element(By.CSS_SELECTOR, "tr[data-status=deprecated]").click()
    skill = browser.find_element(By.ID, "skill-detail")
    assert skill.is_displayed() and "guidance:" in skill.text
    browser.find_element(By.ID, "skill-capsules").click()
    wait.until(lambda d: Select(d.find_element(By.ID, "f-skill")).first_selected_option
               .get_attribute("value") != "")
    assert _console_errors(browser) == []

    shot = tmp_path / "report.png"  # kept as the test's artifact
    browser.get_screenshot_as_file(str(shot))
    assert shot.stat().st_size > 20_000
