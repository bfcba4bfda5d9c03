"""The live view (``ratchet report --watch``) in a real browser against a run in progress: the
scripted scenario runs in a thread, held after round 0 by a gate its model waits on; headless
Chromium opens the page, sees round 0 only, the gate opens, and the page reloads itself into the
finished run's figures, the same as the final report's."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import loop_helpers
import pytest
import ray.cloudpickle
from click.testing import CliRunner
from test_report_browser import _console_errors, browser  # noqa: F401 - the fixture

from ratchet_ray.cli import main
from ratchet_ray.report.html import build_report
from ratchet_ray.report.live import LiveReport, evidence_signature

pytestmark = pytest.mark.slow
ROUNDS = 3


class GatedResponder:
    """The scenario's model, answering nothing while ``gate`` exists once round 0 is durable."""

    def __init__(self, inner, gate: Path, results: Path):
        self.inner, self.gate, self.results = inner, gate, results

    def __call__(self, messages, json_schema=None):
        while self.gate.exists() and any(self.results.glob("**/round_00/summary.json")):
            time.sleep(0.1)
        return self.inner(messages, json_schema)


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers cannot import it


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _dots(driver) -> int:
    return driver.execute_script(
        "return document.querySelectorAll('svg[data-chart=pass] circle').length")


def test_the_live_page_follows_a_run_to_its_final_report(ray_local, browser, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from ratchet_ray.loop.driver import run_loop

    gate = tmp_path / "gate"
    gate.touch()
    config = loop_helpers.scenario_config(tmp_path, ROUNDS)
    models = loop_helpers.scenario_models()
    models.llm.responder = GatedResponder(models.llm.responder, gate, tmp_path / "results")
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["run"] = run_loop(config, models=models, show_progress=False)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    summary = _wait(lambda: next((tmp_path / "results").glob("**/round_00/summary.json"), None),
                    240, "round 0")
    run_dir = summary.parent.parent
    live = LiveReport([run_dir], port=0, interval_s=1.0)
    server = threading.Thread(target=live.serve, daemon=True)
    server.start()
    try:
        browser.get(live.url)
        wait = WebDriverWait(browser, 120)
        wait.until(lambda d: d.find_elements(By.ID, "live-status"))
        assert _dots(browser) == 2, "round 0 only: eval and train"  # the run is held mid-way
        assert thread.is_alive() and not (run_dir / f"round_{ROUNDS - 1:02d}").exists()
        assert _console_errors(browser) == []
        gate.unlink()
        thread.join(timeout=300)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["run"] == run_dir
        wait.until(lambda d: _dots(d) == 2 * ROUNDS)  # the page reloaded itself
        wait.until(lambda d: d.find_element(By.ID, "live-status").get_attribute(
            "data-signature") == evidence_signature([run_dir]))
        live_headline = browser.find_element(By.ID, "headline").text
        live_skills = browser.find_element(By.ID, "skills").text
        final = build_report([run_dir], tmp_path / "final.html")
        browser.get(final.resolve().as_uri())
        wait.until(lambda d: d.find_elements(By.ID, "headline"))
        assert browser.find_element(By.ID, "headline").text == live_headline
        assert browser.find_element(By.ID, "skills").text == live_skills
        assert not browser.find_elements(By.ID, "live-status")
        assert not (run_dir / "report.html").exists()  # the live view writes nothing there
    finally:
        gate.unlink(missing_ok=True)
        live.close()


def test_watch_refuses_what_is_not_a_run_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["report", "--watch", str(tmp_path)])
    assert result.exit_code == 1 and "is not a run dir" in result.output
    assert len(result.output.strip().splitlines()) == 1
