"""The web pages in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``)
driven by Selenium, against the service on a local port, with every host but 127.0.0.1 unresolvable
(the pages and /docs, /redoc must work offline). Screenshots are checked for the pictures.

Skipped when Chromium is not installed, except under CI (``CI`` set), where it fails: ``.ci/run``
installs it.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langclass.core.algebra.lattice import CLASS_KEYS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = Path(os.environ.get("LANGCLASS_TEST_SCREENSHOTS", "")) if os.environ.get("LANGCLASS_TEST_SCREENSHOTS") else None

if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
    if os.environ.get("CI"):
        pytest.fail("chromium and chromium-driver are needed for the browser tests (.ci/run installs them)",
                    pytrace=False)
    pytest.skip("chromium / chromium-driver not installed", allow_module_level=True)

from PIL import Image  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1400,1100",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]  # the network is off for everything else

LANGS = [
    {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "ab-star", "tags": ["demo"]},
    {"regex": "(aa)*", "alphabet": ["a"], "name": "even-a"},
    {"regex": "a(a|b)*", "alphabet": ["a", "b"], "name": "starts-a"},
    {"dfa": {"alphabet": ["a", "b"], "states": ["even", "odd"], "initial": "even", "accepting": ["even"],
             "transitions": {"even": {"a": "odd", "b": "even"}, "odd": {"a": "even", "b": "odd"}}}, "name": "parity"},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    import httpx
    import uvicorn

    from langclass.app.store.db import upgrade
    from langclass.app.main import create_app
    from langclass.app.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('web') / 'web.db'}"
    upgrade(url)
    app = create_app(Settings(database_url=url, classify_isolation="thread", time_limit_s=60.0, worker_slots=1))
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):  # until the server answers (or gives up)
        if srv.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert srv.started, "the server did not start"
    ids = {}
    with httpx.Client(base_url=base, timeout=60) as client:
        for body in LANGS:
            r = client.post("/v1/languages", json=body)
            assert r.status_code == 201, r.text
            ids[body["name"]] = r.json()["id"]
    yield {"base": base, "ids": ids, "url": url}
    srv.should_exit = True
    thread.join(timeout=60)


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=DRIVER))
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def _wait(driver, timeout: float = 60) -> WebDriverWait:
    return WebDriverWait(driver, timeout)


def _image(png: bytes, name: str) -> Image.Image:
    if SHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(png)
    return Image.open(io.BytesIO(png)).convert("RGB")


def _share(img: Image.Image, colour: tuple[int, int, int], tol: int = 40) -> float:
    """Fraction of pixels within ``tol`` (per channel) of ``colour``."""
    px = img.getdata()
    near = sum(1 for p in px if all(abs(p[i] - colour[i]) <= tol for i in range(3)))
    return near / max(1, len(px))


def _ink(img: Image.Image) -> float:
    """Fraction of pixels that are not (near) white: something is drawn."""
    px = img.getdata()
    return sum(1 for p in px if min(p) < 200) / max(1, len(px))


def test_languages_table_and_filter(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(server["base"] + "/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#languages tbody tr[data-id]")
    assert len(rows) == len(LANGS)
    Select(browser.find_element(By.NAME, "class")).select_by_value("ltl_p_mod")
    Select(browser.find_element(By.NAME, "member")).select_by_value("false")
    browser.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
    _wait(browser).until(EC.url_contains("class=ltl_p_mod"))
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#languages tbody tr[data-id] td:first-child a")]
    assert names == ["parity"]  # (ab)*, (aa)*, a(a|b)* are in LTL[P,MOD]; parity of a's among b's is not
    shot = _image(browser.get_screenshot_as_png(), "languages")
    assert _share(shot, (0xC6, 0x28, 0x28), 30) > 0  # the red ✗ of a non-member is on screen


def test_language_page_draws_dfa_lattice_and_eggbox(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(f"{server['base']}/languages/{server['ids']['ab-star']}")
    dfa = browser.find_element(By.CSS_SELECTOR, "#dfa-picture svg")
    assert len(dfa.find_elements(By.CSS_SELECTOR, "g.state")) == 3
    assert len(dfa.find_elements(By.CSS_SELECTOR, "g.state.accepting")) == 1
    img = _image(dfa.screenshot_as_png, "dfa")
    assert img.width > 150 and img.height > 100 and _ink(img) > 0.01  # circles, arrows and labels drawn
    lattice = browser.find_element(By.CSS_SELECTOR, "#lattice-picture svg")
    assert len(lattice.find_elements(By.CSS_SELECTOR, "g.class")) == len(CLASS_KEYS)  # one box per class
    limg = _image(lattice.screenshot_as_png, "lattice")
    assert _share(limg, (0xD9, 0xF2, 0xD9), 8) > 0.01 and _share(limg, (0xF8, 0xD7, 0xD7), 8) > 0.005  # green and red boxes
    # the LTL[P] witness is readable: its words shown as words
    ltl_p = browser.find_element(By.ID, "class-ltl_p").text
    assert "witness" in ltl_p and "u = a" in ltl_p and "v = b" in ltl_p
    boxes = browser.find_elements(By.CSS_SELECTOR, "#eggbox table.dclass")
    assert len(boxes) == 3  # (ab)*: {1}, the 2×2 D-class of a, b, ab, ba, and {aa}
    cells = browser.find_elements(By.CSS_SELECTOR, "#eggbox td.hclass")
    assert sorted(c.text.split("\n")[0] for c in cells) == sorted(["ε*", "a", "ab*", "ba*", "b", "aa*"])
    eimg = _image(browser.find_element(By.ID, "eggbox").screenshot_as_png, "eggbox")
    assert _share(eimg, (0xFF, 0xF3, 0xCD), 6) > 0.01  # the shaded group cells
    _image(browser.get_screenshot_as_png(), "language")
    enc = browser.find_element(By.ID, "encodings").text
    assert "rope_periodic" in enc and "Thm" in enc


def test_notes_in_table_cells_leave_the_class_names_visible(server: dict, browser: webdriver.Chrome) -> None:
    """The logic under each class name (a ``.note``) does not cover the name: their boxes do not
    intersect, and the name's own pixels are not the note's blue (before: an inline ``.note`` box's
    padding drew a blue badge over the lower part of every class name)."""
    browser.get(f"{server['base']}/languages/{server['ids']['ab-star']}")
    rects = browser.execute_script("""
        return [...document.querySelectorAll('table.certs tbody tr, table.encodings tbody tr')].map(tr => {
          const name = tr.querySelector('td b'), note = tr.querySelector('td .note');
          if (!name || !note) return null;
          const a = name.getBoundingClientRect(), b = note.getBoundingClientRect();
          return [a.left, a.top, a.right, a.bottom, b.left, b.top, b.right, b.bottom,
                  getComputedStyle(note).backgroundColor, getComputedStyle(note).borderTopWidth];
        }).filter(x => x);""")
    assert len(rects) >= len(CLASS_KEYS)
    for al, at, ar, ab, bl, bt, br, bb, background, border in rects:
        overlap = min(ar, br) > max(al, bl) and min(ab, bb) > max(at, bt)
        assert not overlap, (al, at, ar, ab, bl, bt, br, bb)
        assert background in ("rgba(0, 0, 0, 0)", "transparent") and border == "0px", (background, border)
    row = browser.find_element(By.ID, "class-ltl_p")
    name = _image(row.find_element(By.CSS_SELECTOR, "td b").screenshot_as_png, "class-name")
    assert _share(name, (0xE8, 0xF1, 0xFB), 6) < 0.05  # no blue badge behind the name


def test_user_state_names_on_the_dfa(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(f"{server['base']}/languages/{server['ids']['parity']}")
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#dfa-picture g.state text")]
    assert sorted(labels) == ["even", "odd"]


def test_add_bad_regex_shows_problem_inline_then_good_one(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(server["base"] + "/languages")
    form = browser.find_element(By.ID, "add-language")
    form.find_element(By.NAME, "regex").send_keys("(ab")
    form.find_element(By.NAME, "alphabet").send_keys("ab")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    problem = browser.find_element(By.ID, "add-problem")
    _wait(browser).until(lambda d: problem.is_displayed() and problem.text)
    assert "regex" in problem.text and "/languages" in browser.current_url and "/languages/" not in browser.current_url
    _image(browser.get_screenshot_as_png(), "add-problem")
    # DFA JSON that does not parse is refused in place too
    form.find_element(By.CSS_SELECTOR, "input[name=kind][value=dfa]").click()
    form.find_element(By.NAME, "dfa").send_keys('{"alphabet": ')
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser).until(lambda d: "not valid JSON" in problem.text)
    form.find_element(By.CSS_SELECTOR, "input[name=kind][value=regex]").click()
    box = form.find_element(By.NAME, "regex")
    box.clear()
    box.send_keys("(ab)*b")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser).until(EC.url_contains("/languages/"))
    assert browser.find_element(By.CSS_SELECTOR, "h1").text == "(ab)*b"


def test_launch_watch_and_cancel_a_job(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(f"{server['base']}/languages/{server['ids']['even-a']}")
    launch = browser.find_element(By.ID, "launch")
    launch.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _wait(browser).until(EC.url_contains("/jobs/"))
    status = browser.find_element(By.ID, "job-status")
    assert status.text.split()[0] in ("queued", "running")
    browser.find_element(By.ID, "cancel-job").click()
    # the live status says cancelled, then the page reloads itself into its final (server-rendered) form
    _wait(browser, 180).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#job-status[data-final=yes]"))
    assert browser.find_element(By.ID, "job-status").text.startswith("cancelled")
    _image(browser.get_screenshot_as_png(), "job-cancelled")
    # the language page lists it
    browser.get(f"{server['base']}/languages/{server['ids']['even-a']}")
    assert "cancelled" in browser.find_element(By.ID, "jobs").text


def test_docs_and_redoc_render_offline(server: dict, browser: webdriver.Chrome) -> None:
    browser.get(server["base"] + "/docs")
    title = _wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, ".swagger-ui .info .title")))
    assert "langclass" in title.text
    assert browser.find_elements(By.CSS_SELECTOR, ".opblock")  # the operations are listed
    _image(browser.get_screenshot_as_png(), "docs")
    browser.get(server["base"] + "/redoc")
    _wait(browser).until(lambda d: "langclass" in d.find_element(By.TAG_NAME, "body").text
                         and d.find_elements(By.CSS_SELECTOR, "h1"))
    _image(browser.get_screenshot_as_png(), "redoc")


def test_add_of_a_stored_language_says_which_labels_were_not_applied(server: dict, browser: webdriver.Chrome) -> None:
    """Issue 24, item 9: the API's ``labels_not_applied`` was ignored and the page went silently to
    the stored language, dropping the name and tags typed in."""
    browser.get(server["base"] + "/languages")
    form = browser.find_element(By.ID, "add-language")
    form.find_element(By.NAME, "regex").send_keys(LANGS[0]["regex"])
    form.find_element(By.NAME, "alphabet").send_keys("".join(LANGS[0]["alphabet"]))
    form.find_element(By.NAME, "name").send_keys("another name")
    form.find_element(By.NAME, "tags").send_keys("new-tag")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    note = browser.find_element(By.ID, "add-note")
    _wait(browser).until(lambda d: note.is_displayed() and note.text)
    assert "already stored" in note.text and '"another name"' in note.text and "new-tag" in note.text
    assert "/languages/" not in browser.current_url
    link = browser.find_element(By.ID, "add-note-link").get_attribute("href")
    assert link.endswith("/languages/" + server["ids"][LANGS[0]["name"]])


@pytest.fixture(scope="module")
def census_run(server: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """A tiny stored census (at most 3 states over 2 letters: 1,054 languages, under a second)."""
    from langclass.app.store.census_runs import save_run
    from langclass.app.store.db import Database
    from langclass.core.census.run import census

    c = census(3, 2, keep_members=True)
    db = Database(server["url"])
    try:
        with db.session_scope() as session:
            return save_run(session, c, tmp_path_factory.mktemp("census"), code_version="test").id, c.to_dict()
    finally:
        db.dispose()


def test_census_page_draws_the_annotated_lattice_and_opens_a_member(server: dict, browser: webdriver.Chrome,
                                                                     census_run: tuple[str, dict]) -> None:
    run_id, counts = census_run
    browser.get(f"{server['base']}/census")
    browser.find_element(By.CSS_SELECTOR, f"#census-runs tr[data-id='{run_id}'] a").click()
    _wait(browser).until(EC.url_contains(f"/census/{run_id}"))
    states = {r.get_attribute("data-states"): r.text for r in browser.find_elements(By.CSS_SELECTOR, "#census-states tbody tr")}
    assert "1,028" in states["3"] and "ok" in states["3"]
    lattice = browser.find_element(By.CSS_SELECTOR, "#lattice-picture svg")
    boxes = lattice.find_elements(By.CSS_SELECTOR, "g.class.count")
    assert len(boxes) == len(CLASS_KEYS)  # one box per class, each with its count visible
    for box in boxes:
        key = box.get_attribute("data-class")
        shown = box.find_element(By.CSS_SELECTOR, "text.count").text
        assert shown.startswith(f"{counts['classes'][key]:,}"), (key, shown)
    limg = _image(lattice.screenshot_as_png, "census-lattice")
    assert _share(limg, (0xDD, 0xE8, 0xF6), 8) > 0.01 and _ink(limg) > 0.01  # the blue boxes and their labels drawn
    Select(browser.find_element(By.CSS_SELECTOR, "#census-filter select[name=in]")).select_by_value("ltl_p_y_mod")
    Select(browser.find_element(By.CSS_SELECTOR, "#census-filter select[name=not_in]")).select_by_value("ltl_p_y")
    browser.find_element(By.CSS_SELECTOR, "#census-filter button[type=submit]").click()
    _wait(browser).until(EC.url_contains("not_in=ltl_p_y"))
    want = counts["differences"]["ltl_p_y_mod-ltl_p_y"]  # LTL[P,Y] ⊂ LTL[P,Y,MOD] is an inclusion of the lattice
    assert browser.find_element(By.ID, "census-total").text.startswith(f"{want:,} language")
    links = browser.find_elements(By.CSS_SELECTOR, "#census-list a.member")
    assert links
    links[0].click()
    _wait(browser).until(EC.url_contains("/languages/"))
    assert browser.find_element(By.CSS_SELECTOR, "#lattice-picture svg")  # the member's own language page
    _image(browser.get_screenshot_as_png(), "census-member")
