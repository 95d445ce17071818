"""The pictures and pages of spmdcheck in headless Chromium (Debian's chromium + chromium-driver,
driven by the pinned selenium of tests/requirements-browser.txt): each page renders with no
console errors, a screenshot is taken (written to $SPMDCHECK_SCREENSHOT_DIR when set), and the
DOM holds the expected tiles, device ids, verdicts and collectives.

Run by tests/run_browser_test.sh (ctest browser_pages_test) with SPMDCHECK_BINARY and
SPMDCHECK_SOURCE_DIR set.
"""

import os
import shutil
import struct
import subprocess
import tempfile

import pytest

selenium = pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

BINARY = os.environ.get("SPMDCHECK_BINARY", "")
SOURCE = os.environ.get("SPMDCHECK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
SHOTS = os.environ.get("SPMDCHECK_SCREENSHOT_DIR", "")


def chromium_paths():
  browser = shutil.which("chromium") or shutil.which("chromium-browser")
  driver = shutil.which("chromedriver")
  return browser, driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
  path, driver_path = chromium_paths()
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


def run(*args, ok=(0,)):
  assert BINARY, "SPMDCHECK_BINARY is not set"
  proc = subprocess.run([BINARY, *args], cwd=SOURCE, capture_output=True, text=True, timeout=300)
  assert proc.returncode in ok, (args, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
  return proc


def png_size(path):
  with open(path, "rb") as f:
    head = f.read(24)
  assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
  return struct.unpack(">II", head[16:24])


def load(driver, path, name):
  """Opens `path`, checks the console has no errors, takes a screenshot."""
  driver.get_log("browser")  # Drop what earlier pages logged.
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


def tiles(driver):
  return {
      e.get_attribute("data-range"): e.get_attribute("data-devices")
      for e in driver.find_elements(By.CSS_SELECTOR, "g.tile")
  }


def test_partially_replicated_transposed_iota(browser, tmp_path):
  # docs/sharding.md: which devices hold each tile of this sharding on f32[10,7].
  page = tmp_path / "partial.html"
  run("sharding", "show", "{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
      "--shape", "f32[10,7]", "--html", str(page))
  load(browser, page, "partial")
  assert tiles(browser) == {
      "0:5,0:4": "0 1", "0:5,4:7": "4 5", "5:10,0:4": "2 3", "5:10,4:7": "6 7"}
  devices = browser.find_elements(By.CSS_SELECTOR, "g.device")
  assert sorted(int(d.get_attribute("data-device")) for d in devices) == list(range(8))
  # Hovering a tile outlines the mesh cells of its devices (and nothing else).
  tile = browser.find_element(By.CSS_SELECTOR, "g.tile[data-range='0:5,4:7']")
  ActionChains(browser).move_to_element(tile).perform()
  lit = browser.find_elements(By.CSS_SELECTOR, "g.device.lit")
  assert sorted(int(d.get_attribute("data-device")) for d in lit) == [4, 5]
  rows = browser.find_elements(By.CSS_SELECTOR, "#devices tr[data-device]")
  assert len(rows) == 8
  assert "replicas" in browser.find_element(By.ID, "devices").text


def test_svg_with_mesh_and_manual_groups(browser, tmp_path):
  # Manual subgroups: device = 4*row + 2*manual group + replica (iota [2,1,2,2]).
  svg = tmp_path / "manual.svg"
  run("sharding", "show", "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
      "--shape", "f32[8,6]", "--svg", str(svg), "--mesh", "rows=2,groups=2,replicas=2")
  load(browser, svg, "manual")
  groups = {}
  for e in browser.find_elements(By.CSS_SELECTOR, "g.tile"):
    groups[(e.get_attribute("data-manual-group"), e.get_attribute("data-range"))] = (
        e.get_attribute("data-devices"))
  assert groups == {
      ("0", "0:4,0:6"): "0 1", ("0", "4:8,0:6"): "4 5",
      ("1", "0:4,0:6"): "2 3", ("1", "4:8,0:6"): "6 7"}
  assert "rows=2, groups=2, replicas=2" in browser.page_source


def test_rank_three_and_uneven(browser, tmp_path):
  page = tmp_path / "rank3.html"
  run("sharding", "show", "{devices=[2,1,3]<=[6]}", "--shape", "s32[4,2,5]", "--html", str(page))
  load(browser, page, "rank3")
  t = tiles(browser)
  assert len(t) == 6
  # dim 2 has 5 elements over 3 tiles: 0:2, 2:4, 4:5.
  assert t["0:2,0:2,4:5"] == "2" and t["2:4,0:2,0:2"] == "3"


def test_check_page(browser, tmp_path):
  page = tmp_path / "check.html"
  run("check", "corpus/hlo/reduce_uneven.hlo", "--html", str(page))
  load(browser, page, "check")
  outcome = browser.find_element(By.CSS_SELECTOR, "section.outcome")
  assert outcome.get_attribute("data-verdict") == "holds"
  collectives = browser.find_elements(By.CSS_SELECTOR, "g.collective")
  assert [c.get_attribute("data-opcode") for c in collectives] == ["all-reduce"]
  # replica_groups=[1,4]<=[4]: one group of the 4 devices.
  cells = collectives[0].find_elements(By.CSS_SELECTOR, "g.device")
  assert [(c.get_attribute("data-device"), c.get_attribute("data-group")) for c in cells] == [
      ("0", "0"), ("1", "0"), ("2", "0"), ("3", "0")]
  assert "reproduce" in browser.page_source


def test_check_page_of_a_failing_module(browser, tmp_path):
  seed = os.path.join(SOURCE, "..", "shared", "cases", "seed-scatter")
  if not os.path.isdir(seed):
    pytest.skip("the shared seed case is absent")
  page = tmp_path / "inject.html"
  run("check", os.path.join(seed, "pre.hlo"), "--inject-bug", "permute-pairs-inverted", "--html",
      str(page), ok=(1,))
  load(browser, page, "inject")
  verdict = browser.find_element(By.CSS_SELECTOR, "section.outcome").get_attribute("data-verdict")
  assert verdict == "fails"
  first = int(browser.find_element(By.ID, "first-wrong").find_element(By.TAG_NAME, "b").text)
  wrong = [int(e.get_attribute("data-device"))
           for e in browser.find_elements(By.CSS_SELECTOR, "svg.wrong-devices g.device.wrong")]
  assert first in wrong and 0 < len(wrong) <= 64
  assert browser.find_element(By.ID, "first-divergence").text.startswith("first divergence")


def test_lint_page(browser, tmp_path):
  page = tmp_path / "lint.html"
  run("lint", "corpus/lint/wasteful/03_two_permutes.hlo", "--html", str(page), ok=(1,))
  load(browser, page, "lint")
  finding = browser.find_element(By.CSS_SELECTOR, "section.finding")
  assert finding.get_attribute("data-status") == "proved"
  charts = finding.find_elements(By.CSS_SELECTOR, "svg.chain")
  assert len(charts) == 2  # before and after
  before = [c.get_attribute("data-name") for c in charts[0].find_elements(By.CSS_SELECTOR,
                                                                          "g.collective")]
  assert before == ["collective-permute.1", "collective-permute.2"]
  # The first permute is the shift by +1 around the ring of 8: an arrow per pair.
  pairs = charts[0].find_elements(By.CSS_SELECTOR, "g.collective")[0].find_elements(
      By.CSS_SELECTOR, "path.pair")
  assert sorted(p.get_attribute("data-devices") for p in pairs) == sorted(
      f"{d} {(d + 1) % 8}" for d in range(8))
  after = charts[1].find_elements(By.CSS_SELECTOR, "g.collective")
  assert [c.get_attribute("data-opcode") for c in after] == ["collective-permute"]
  rows = finding.find_elements(By.CSS_SELECTOR, "table.cost tr")
  assert [r.text.split()[:3] for r in rows[1:]] == [["before", "2", "2"], ["after", "1", "1"]]
