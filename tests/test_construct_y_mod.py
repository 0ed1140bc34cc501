"""``construct`` for LTL[P,Y,MOD] from the automaton alone (issue 22, item 5): the marked route's formula
compiled with periodic RoPE of period m and recency heads, verified exactly (run_construction, the
CLI, the Python API and the API job)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import langclass
from _local_brute import small_dfas
from langclass.core.base.errors import UnsupportedError
from langclass.core.ingest.parse import parse_regex
from langclass.core.synthesis.marked_y_mod import ltl_p_y_mod_search
from langclass.models.construct.route_marked import MARKED_METHOD, default_y_mode
from langclass.models.construct.verify import run_construction

SMALL = {"all_words_up_to": 8, "random_words": 2, "random_max_length": 120}


@pytest.mark.parametrize("regex,modulus", [("(ab|ba)*", 2), ("((a|b)(a|b))*(a|b)a", 2), ("((a|b)(a|b))*a", 2)])
def test_languages_outside_ltl_p_y_and_ltl_p_mod_build_from_the_regex(regex, modulus):
    r = run_construction({"regex": regex, "alphabet": ["a", "b"], **SMALL})
    assert r["attention"] == "soft" and r["encoding"] == "rope_periodic+alibi" and r["n_max"] is None
    assert r["synthesis"]["method"] == MARKED_METHOD and r["fragment"] == "LTL[P,Y,MOD]"
    assert r["synthesis"]["notes"][0].startswith(f"modulus m = {modulus} ")
    assert ltl_p_y_mod_search(parse_regex(regex, ["a", "b"])).modulus == modulus
    assert r["exact"] and r["agrees_with_dfa"] and r["words_checked"] == 2 ** 9 - 1, r["first_failure"]
    enc = r["model"]["encodings"]
    assert enc[0]["family"] == "rope_periodic" and enc[0]["manifest"]["periods"][0] == modulus, enc
    assert {e["family"] for e in enc} == {"rope_periodic", "alibi"}
    assert all(s >= 128.0 for e in enc[1:] for s in e["manifest"]["slopes"] if s)  # recency slope ≥ f_large(float32)


def test_conventional_rope_remains_available_and_hard_attention_is_unchanged():
    spec = {"regex": "(ab|ba)*", "alphabet": ["a", "b"], "all_words_up_to": 6, "random_words": 0}
    r = run_construction({**spec, "y_mode": "rope"})
    assert r["encoding"] == "rope_periodic+rope" and r["n_max"] is not None and r["exact"]
    r = run_construction({**spec, "attention": "hard"})  # (ab|ba)* is star-free: NoPE
    assert r["attention"] == "hard" and r["encoding"] == "nope" and r["exact"]
    r = run_construction({**spec, "regex": "((a|b)(a|b))*a", "attention": "hard"})  # not star-free: MOD marks
    assert r["attention"] == "hard" and r["encoding"] == "mod_onehot" and r["exact"]


def test_soft_attention_outside_ltl_p_y_mod_says_why():
    with pytest.raises(UnsupportedError) as e:  # star-free but not LTL[P,Y,MOD]
        run_construction({"regex": "(a|b|c)*ac*", "alphabet": ["a", "b", "c"], "attention": "soft"})
    assert "outside LTL[P,Y,MOD]" in e.value.detail and "LTL[P,Y]" in e.value.detail
    r = run_construction({"regex": "(a|b|c)*ac*", "alphabet": ["a", "b", "c"], "all_words_up_to": 5, "random_words": 0})
    assert r["attention"] == "hard" and r["exact"]  # auto: star-free, hard attention as before


def test_the_marked_route_defaults_to_recency_heads_only():
    from langclass.core.synthesis.synthesis import synthesize

    assert default_y_mode(None) == "rope"
    assert default_y_mode(synthesize(parse_regex("(a|b)*a", ["a", "b"]))) == "rope"
    r = run_construction({"regex": "(a|b)*a", "alphabet": ["a", "b"], "all_words_up_to": 5, "random_words": 0})
    assert r["encoding"] == "rope" and r["synthesis"]["method"] != MARKED_METHOD  # LTL[P,Y]: the paper's RoPE


def test_cli_and_python_api():
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    res = CliRunner().invoke(app, ["construct", "--regex", "(ab|ba)*", "--alphabet", "ab", "--all-words", "6",
                                   "--random-words", "2", "--random-max-length", "80", "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.output)
    assert rec["exact"] and rec["encoding"] == "rope_periodic+alibi" and rec["synthesis"]["method"] == MARKED_METHOD
    r = langclass.construct("((a|b)(a|b))*(a|b)a", alphabet="ab", all_words_up_to=6, random_words=2,
                            random_max_length=80)
    assert r["exact"] and r["encoding"] == "rope_periodic+alibi"


def test_api_job(make_client: Any, sqlite_url: str) -> None:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, job_lease_s=5.0, worker_slots=1)
    lid = client.post("/v1/languages", json={"regex": "(ab|ba)*", "alphabet": ["a", "b"]}).json()["id"]
    r = client.post(f"/v1/languages/{lid}/experiments",
                    json={"kind": "construct", "all_words_up_to": 6, "random_words": 2, "random_max_length": 60})
    assert r.status_code == 202, r.text
    end = time.monotonic() + 120
    while (job := client.get(f"/v1/jobs/{r.json()['id']}").json())["status"] not in ("succeeded", "failed") \
            and time.monotonic() < end:
        time.sleep(0.1)
    assert job["status"] == "succeeded", job.get("error")
    assert job["result"]["exact"] and job["result"]["encoding"] == "rope_periodic+alibi"


@pytest.mark.slow
@pytest.mark.parametrize("regex", ["(ab|ba)*", "((a|b)(a|b))*(a|b)a"])
def test_exact_on_words_longer_than_2000(regex):
    """The issue's acceptance: from the regex alone, exact on all words ≤ 12 and on random words beyond 2,000."""
    r = run_construction({"regex": regex, "alphabet": ["a", "b"], "random_words": 4, "random_max_length": 2600})
    assert r["exact"] and r["agrees_with_dfa"] and r["random_words_up_to"] == 2600 and r["all_words_up_to"] == 12
    assert r["encoding"] == "rope_periodic+alibi" and r["n_max"] is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_random_ltl_p_y_mod_dfas_build_and_verify(A):
    """Random DFAs: every LTL[P,Y,MOD] language outside LTL[P,Y] ∪ LTL[P,MOD] builds on this route with
    periodic RoPE + recency heads, exact on all words ≤ 5 and a random word; the others keep their route."""
    from langclass.core.synthesis.synthesis import synthesize

    try:
        synthesize(A)
        return  # LTL[P], LTL[P,MOD] or LTL[P,Y]: the earlier routes (tests of their own)
    except UnsupportedError:
        pass
    search = ltl_p_y_mod_search(A)
    spec = {"dfa": A.to_canonical_dict(), "all_words_up_to": 5, "random_words": 1, "random_max_length": 30,
            "attention": "soft"}
    if search.modulus is None:
        with pytest.raises(UnsupportedError, match="outside LTL\\[P,Y,MOD\\]"):
            run_construction(spec)
        return
    r = run_construction(spec)
    assert r["synthesis"]["method"] == MARKED_METHOD and r["encoding"] == "rope_periodic+alibi"
    assert r["exact"] and r["agrees_with_dfa"], r["first_failure"]
    assert r["synthesis"]["notes"][0].startswith(f"modulus m = {search.modulus} ")
