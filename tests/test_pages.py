"""The web pages without a browser (both database backends): they render, validate their filters
with a message instead of a 500, answer 404 for unknown ids, summarize a monoid over the cap, and
ship their assets (no CDN: /docs and /redoc load Swagger UI and ReDoc from this server)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from langclass.core.algebra.lattice import CLASS_KEYS

PARITY = {"alphabet": ["a", "b"], "states": ["even", "odd"], "initial": "even", "accepting": ["even"],
          "transitions": {"even": {"a": "odd", "b": "even"}, "odd": {"a": "even", "b": "odd"}}}


def _add(api: Any, body: dict) -> str:
    r = api.post("/v1/languages", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_languages_page_lists_and_filters(api: Any) -> None:
    ab = _add(api, {"regex": "(ab)*", "alphabet": ["a", "b"], "name": "ab", "tags": ["t1"]})
    par = _add(api, {"dfa": PARITY, "name": "parity"})
    r = api.get("/languages")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert f'data-id="{ab}"' in r.text and f'data-id="{par}"' in r.text
    r = api.get("/languages", params={"class": "group", "member": "true", "states": "", "alphabet_size": "", "name": "",
                                      "tag": ""})
    assert r.status_code == 200 and f'data-id="{par}"' in r.text and f'data-id="{ab}"' not in r.text
    r = api.get("/languages", params={"tag": "t1"})
    assert f'data-id="{ab}"' in r.text and f'data-id="{par}"' not in r.text
    r = api.get("/languages", params={"states": "two", "class": "nope"})
    assert r.status_code == 422 and "not a whole number" in r.text and "unknown class key" in r.text
    assert api.get("/", follow_redirects=False).headers["location"] == "/languages"


def test_language_page_has_the_pictures(api: Any) -> None:
    par = _add(api, {"dfa": PARITY, "name": "parity"})
    r = api.get(f"/languages/{par}")
    assert r.status_code == 200
    page = r.text
    assert page.count('class="state') == 2 and ">even<" in page and ">odd<" in page  # the user's state names
    assert page.count('class="class ') == len(CLASS_KEYS)  # the lattice: one box per class
    assert 'class="eggbox"' in page and "Z2" in page  # parity's monoid is the group Z2
    assert "rope_periodic" not in page or "encodings" in page
    assert api.get("/languages/" + "0" * 64).status_code == 404


def test_eggbox_over_the_monoid_cap_says_so(make_client: Any, migrated_url: str) -> None:
    api = make_client(migrated_url, max_monoid_size=3)
    r = api.post("/v1/languages", json={"regex": "(ab)*", "alphabet": ["a", "b"]})  # monoid of 6 elements
    assert r.status_code == 201, r.text
    page = api.get(f"/languages/{r.json()['id']}")
    assert page.status_code == 200 and "Not drawn" in page.text and "max_monoid_size" in page.text


def test_eggbox_pages(api: Any) -> None:
    lid = _add(api, {"regex": "(a|b)*a(a|b)(a|b)(a|b)", "alphabet": ["a", "b"]})  # 16 D-classes
    first = api.get(f"/languages/{lid}").text
    total = int(re.search(r"D-classes page 1 of (\d+)", first).group(1))
    assert total >= 2
    last = api.get(f"/languages/{lid}", params={"dpage": total - 1}).text
    assert f"page {total} of {total}" in last and "← previous" in last


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_docs_load_no_cdn(api: Any, path: str) -> None:
    html = api.get(path).text
    assert "cdn." not in html and "fonts.googleapis" not in html
    for src in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert src.startswith("/"), src
        assert api.get(src).status_code == 200, src
    assert api.get("/static/pages.js").status_code == 200 and api.get("/static/style.css").status_code == 200


@pytest.mark.slow
def test_finished_train_job_pages_show_plot_and_runs(make_client: Any, sqlite_url: str) -> None:
    """A succeeded training job (its result from a real, tiny run in this process, stored as the
    worker stores it) shows its plot and run table on the job page and its plot on the language page."""
    import torch

    import langclass
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import upgrade

    torch.set_num_threads(1)
    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    lid = _add(api, {"regex": "(aa)*", "alphabet": ["a"]})
    result = langclass.train("(aa)*", alphabet="a", encodings=["nope"], seeds=[0], overrides={
        "max_steps": 5, "train_lengths": [1, 8], "test_lengths": [9, 10], "eval_per_length": 8,
        "d_model": 8, "d_ff": 16, "n_heads": 2, "n_layers": 1}).to_dict()
    with api.app.state.db.session_scope() as session:
        row = jobrepo.create_job(session, language_id=lid, kind="train", spec=result["spec"], max_attempts=1)
        row.status, row.result, row.attempts = "succeeded", result, 1
        jid = row.id
    page = api.get(f"/jobs/{jid}").text
    assert f'src="/v1/jobs/{jid}/plot.png"' in page and 'id="runs"' in page and 'data-final="yes"' in page
    assert page.count("<tr>") == 2  # header + the one run
    assert api.get(f"/v1/jobs/{jid}/plot.png").headers["content-type"] == "image/png"
    assert f"/v1/jobs/{jid}/plot.png" in api.get(f"/languages/{lid}").text  # the plot on the language page


@pytest.mark.parametrize("body", [
    {"regex": "(b*ab*a)*b*", "alphabet": ["a", "b"]},  # parity of a's: no hard-attention encoding known
    {"regex": "(a(a(ab)*b)*b)*", "alphabet": ["a", "b"]},  # depth-bounded Dyck: not in LTL[P,MOD] / LTL[P,Y]
    {"dfa": PARITY, "name": "parity"},
])
def test_language_page_never_prints_python_none(api: Any, body: dict) -> None:
    lid = _add(api, body)
    r = api.get(f"/languages/{lid}")
    assert r.status_code == 200
    text = re.sub(r"<[^>]+>", " ", r.text)  # the visible text, tags removed
    assert not re.search(r"\bNone\b", text), re.findall(r".{60}\bNone\b.{20}", text)
    assert "none known" in r.text and "—" in r.text


def test_construct_job_page_states_the_length_range_exactness_holds_for(make_client: Any, sqlite_url: str) -> None:
    """A Y^k construction is exact only up to N_max: the page says so (before: a bare "exact: True")."""
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    lid = _add(api, {"regex": "(a|b)*a", "alphabet": ["a", "b"]})
    base = {"encoding": "rope_y", "attention": "soft", "exact": True, "all_words_up_to": 12, "random_words_checked": 32,
            "random_words_up_to": 300}
    with api.app.state.db.session_scope() as session:
        ids = []
        for extra in ({"n_max": 300, "beyond_n_max": {"words_checked": 8, "longest": 2000, "wrong": 3}}, {"n_max": None}):
            job = jobrepo.create_job(session, language_id=lid, kind="construct", spec={"kind": "construct"}, max_attempts=1)
            job.status, job.attempts, job.progress = "succeeded", 1, {"phase": "done"}
            job.result = {**base, **extra}
            ids.append(job.id)
    text = [re.sub(r"<[^>]+>", "", re.search(r'<p id="construct-exact">(.*?)</p>', api.get(f"/jobs/{i}").text, re.S).group(1))
            for i in ids]
    assert "exact: True for words of length ≤ N_max = 300" in text[0] and "longer words are not guaranteed" in text[0]
    assert "Beyond N_max: 8 words up to length 2000, 3 wrong" in text[0]
    assert "exact: True with no length bound from Y^k heads (no N_max)" in text[1]


def test_finished_job_page_full_progress_and_one_verdict_line_each(make_client: Any, sqlite_url: str) -> None:
    """A succeeded job's bar is full (not value 0 next to "done"); a failed one hides it; the
    verdict's per-encoding lines render one per paragraph, not run together."""
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    lid = _add(api, {"regex": "(aa)*", "alphabet": ["a"]})
    lines = ["nope: no run reached length 60", "rope_periodic: perfect up to length 60"]
    with api.app.state.db.session_scope() as session:
        ok = jobrepo.create_job(session, language_id=lid, kind="train", spec={"kind": "train"}, max_attempts=1)
        ok.status, ok.attempts, ok.progress = "succeeded", 1, {"phase": "done"}
        ok.result = {"runs": [], "verdict": {"text": "\n".join(lines), "per_encoding": {}}}
        bad = jobrepo.create_job(session, language_id=lid, kind="train", spec={"kind": "train"}, max_attempts=1)
        bad.status, bad.attempts = "failed", 1
        ok_id, bad_id = ok.id, bad.id
    page = api.get(f"/jobs/{ok_id}").text
    bar = re.search(r"<progress id=\"job-progress\"[^>]*>", page).group(0)
    assert 'max="1"' in bar and 'value="1"' in bar and "hidden" not in bar
    assert re.findall(r'<p class="verdict-line">([^<]*)</p>', page) == lines
    bar = re.search(r"<progress id=\"job-progress\"[^>]*>", api.get(f"/jobs/{bad_id}").text).group(0)
    assert "hidden" in bar


def test_construct_job_page_describes_the_model_built_and_the_routes_compared(make_client: Any, sqlite_url: str) -> None:
    """A construct job's page shows the route built, the model's size, the checks and the routes
    compared (before: one sentence), and the local-divisor formula only as the candidate not built."""
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    lid = _add(api, {"regex": "0*((11)+0+|1(11)*(00)+)*1*", "alphabet": ["0", "1"]})
    result = {"kind": "construct", "input": "regex", "encoding": "mod_onehot", "attention": "hard", "mask": "strict",
              "dtype": "float32", "exact": True, "decisions_exact": True, "simulation_exact": True, "all_words_up_to": 12,
              "words_checked": 8191, "random_words_checked": 32, "random_words_up_to": 2000, "n_max": None,
              "formula": None, "fragment": None, "synthesis": None, "program": "x1 = rightmost j < i ...\nout = x1",
              "model": {"layers": 9, "heads": 7, "d_model": 40, "parameters": 115467, "mask": "strict"},
              "route": {"route": "cascade", "cascade_height": 4, "layers": 9, "heads": 7, "d_model": 40, "parameters": 115467,
                        "candidates": {"cascade": {"layers": 9, "heads": 7, "d_model": 40, "parameters": 115467},
                                       "local-divisors": {"parameters_at_least": 10 ** 8, "planned": False, "built": False,
                                                          "formula": "P (a & MOD(2,1))", "synthesis": {"verified": False}}}},
              "seconds": 1.9, "build_seconds": 0.04, "verify_seconds": 1.8}
    with api.app.state.db.session_scope() as session:
        job = jobrepo.create_job(session, language_id=lid, kind="construct", spec={"kind": "construct"}, max_attempts=1)
        job.status, job.attempts, job.progress, job.result = "succeeded", 1, {"phase": "done"}, result
        jid = job.id
    page = api.get(f"/jobs/{jid}").text
    visible = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "route built cascade (Krohn–Rhodes cascade of height 4)" in visible
    assert "9 layers, 7 heads, d_model 40, 115,467 parameters" in visible
    assert "decisions exact True, simulation exact True, 8191 words up to length 12" in visible
    candidates = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.search(r'id="construct-candidates">(.*?)</table>', page, re.S).group(1)))
    assert "local-divisors no at least 100,000,000 parameters (not planned) its formula (not built)" in candidates
    assert "cascade yes" in candidates
    assert "verified False" not in visible and not re.search(r"\bNone\b", visible)


def test_jobs_page_lists_jobs_with_filters_and_links(make_client: Any, sqlite_url: str) -> None:
    """``/jobs`` lists every job newest first with its language, status and page (before: 404),
    filtered by status and kind; an unknown filter value is a problem on the page, not a 500."""
    from langclass.app.store import jobs as jobrepo
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    api = make_client(sqlite_url, worker_slots=0)
    lid = _add(api, {"regex": "(ab)*", "alphabet": ["a", "b"]})
    with api.app.state.db.session_scope() as session:
        done = jobrepo.create_job(session, language_id=lid, kind="construct", spec={"kind": "construct"}, max_attempts=1)
        done.status = "succeeded"
        queued = jobrepo.create_job(session, language_id=lid, kind="train", spec={"kind": "train"}, max_attempts=1)
        ids = (done.id, queued.id)
    r = api.get("/jobs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    for jid in ids:
        assert f'href="/jobs/{jid}"' in r.text
    assert f'href="/languages/{lid}"' in r.text and 'href="/jobs">Jobs</a>' in r.text
    only = api.get("/jobs", params={"status": "succeeded"}).text
    assert f'href="/jobs/{ids[0]}"' in only and f'href="/jobs/{ids[1]}"' not in only
    only = api.get("/jobs", params={"kind": "train", "status": ""}).text
    assert f'href="/jobs/{ids[1]}"' in only and f'href="/jobs/{ids[0]}"' not in only
    bad = api.get("/jobs", params={"status": "done"})
    assert bad.status_code == 200 and "status: &#39;done&#39; is not one of" in bad.text
    assert api.get("/jobs", params={"cursor": "garbage"}).status_code == 400
