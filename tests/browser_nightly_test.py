"""The nightly report page (report.html of `spmdcheck nightly`, docs/nightly.md) in headless
Chromium (Debian's chromium + chromium-driver, the pinned selenium of
tests/requirements-browser.txt): two short nights on one state directory (the reference campaign
with a drill bug, so that there is a finding, new in the first night and known in the second);
the page renders with no console errors, a screenshot is taken (to $SPMDCHECK_SCREENSHOT_DIR
when set), and the DOM holds the findings table (new vs known) and the trend plots with a point
per night.

Run by tests/run_browser_test.sh (ctest browser_nightly_test) with SPMDCHECK_BINARY and
SPMDCHECK_SOURCE_DIR set.
"""

import os
import shutil
import struct
import subprocess

import pytest

selenium = pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

BINARY = os.environ.get("SPMDCHECK_BINARY", "")
SOURCE = os.environ.get("SPMDCHECK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
SHOTS = os.environ.get("SPMDCHECK_SCREENSHOT_DIR", "")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
  path = shutil.which("chromium") or shutil.which("chromium-browser")
  driver_path = shutil.which("chromedriver")
  if not path or not driver_path:
    pytest.skip("chromium and chromium-driver (Debian packages) are not installed")
  options = Options()
  options.binary_location = path
  for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--window-size=1000,1400"):
    options.add_argument(flag)
  options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
  options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
  driver = webdriver.Chrome(service=Service(driver_path), options=options)
  yield driver
  driver.quit()


def night(state, name, ok):
  assert BINARY, "SPMDCHECK_BINARY is not set"
  proc = subprocess.run(
      [BINARY, "nightly", "--seconds", "6", "--targets", "reference", "--inject-bug",
       "dot-padding-unmasked", "--night", name, "--out", str(state)],
      cwd=SOURCE, capture_output=True, text=True, timeout=300)
  assert proc.returncode == ok or (ok is None and proc.returncode in (0, 1)), (name, proc.returncode, proc.stdout[-3000:], proc.stderr[-2000:])


def png_size(path):
  with open(path, "rb") as f:
    head = f.read(24)
  assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
  return struct.unpack(">II", head[16:24])


def load(driver, path, name):
  driver.get_log("browser")
  driver.get("file://" + os.path.abspath(path))
  assert driver.execute_script("return document.readyState") == "complete"
  errors = [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
  assert errors == [], errors
  if SHOTS:
    os.makedirs(SHOTS, exist_ok=True)
  shot = os.path.join(SHOTS or os.path.dirname(path), name + ".png")
  assert driver.save_screenshot(shot)
  width, height = png_size(shot)
  assert width >= 500 and height >= 500
  return shot


def finding_rows(driver):
  return {r.get_attribute("data-signature"): r.get_attribute("data-status")
          for r in driver.find_elements(By.CSS_SELECTOR, "#findings tr.finding-row")}


def test_two_nights_report(browser, tmp_path):
  state = tmp_path / "state"
  night(state, "night-1", ok=1)  # The drill's finding is a new bug claim.
  load(browser, state / "report.html", "nightly-1")
  first = finding_rows(browser)
  # The drill's bug shows as wrong-result.all-reduce and, depending on the cases reached, others.
  assert first.get("wrong-result.all-reduce") == "new" and set(first.values()) == {"new"}, first
  night(state, "night-2", ok=None)  # wrong-result.all-reduce again: known.
  shot = load(browser, state / "report.html", "nightly-2")
  assert os.path.getsize(shot) > 10000
  second = finding_rows(browser)
  assert second["wrong-result.all-reduce"] == "known"
  for signature, status in second.items():
    assert status == ("known" if signature in first else "new"), (signature, status)
  outcome = browser.find_element(By.CSS_SELECTOR, "section.outcome")
  assert outcome.get_attribute("data-status") == "complete"
  assert browser.find_element(By.ID, "canary").get_attribute("data-found") == "true"
  targets = {r.get_attribute("data-target"): r.get_attribute("data-status")
             for r in browser.find_elements(By.CSS_SELECTOR, "#targets tr[data-target]")}
  assert targets == {"canary": "done", "reference": "done"}
  plots = {p.get_attribute("data-metric"): p
           for p in browser.find_elements(By.CSS_SELECTOR, "svg.trend")}
  assert set(plots) == {"cases_per_second", "coverage", "findings", "acceptance_rate"}
  # A point per night on the reference campaign's cases/s, visible on the page.
  series = plots["cases_per_second"].find_element(By.CSS_SELECTOR, "g.series[data-series='reference']")
  points = series.find_elements(By.CSS_SELECTOR, "circle.point")
  assert [p.get_attribute("data-night") for p in points] == ["night-1", "night-2"]
  assert all(float(p.get_attribute("data-value")) > 0 for p in points)
  assert plots["cases_per_second"].size["width"] > 300
  # The finding's cases per night; the acceptance rate of ours is 100%.
  found = plots["findings"].find_element(By.CSS_SELECTOR, "g.series[data-series='wrong-result.all-reduce']")
  assert len(found.find_elements(By.CSS_SELECTOR, "circle.point")) == 2
  accepted = plots["acceptance_rate"].find_elements(By.CSS_SELECTOR, "circle.point")
  assert [float(p.get_attribute("data-value")) for p in accepted] == [100.0, 100.0]
  # No libFuzzer target tonight: its plot says so rather than drawing nothing.
  assert "no data yet" in plots["coverage"].text
