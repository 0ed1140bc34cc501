"""The published suite (langclass.core.ingest.suite, models.experiments.suite_report, app.usecases.suite,
``langclass sweep --suite``, ``langclass.sweep(suite=...)``, ``POST /v1/sweeps {"suite": ...}``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from langclass.app.cli.commands import app
from langclass.core.base.errors import InputError
from langclass.core.ingest.suite import SUITES, SuiteLanguage, load_suite, parse_suite_text, suite_alphabet, suite_source
from langclass.models.experiments.suite_report import agreement, agreement_lines, markdown_suite, suite_csv_rows, suite_row

SUITE = "state-tracking-crasp"
TINY = {"max_steps": 2, "eval_per_length": 2, "train_lengths": {"range": [1, 8]}, "test_lengths": {"lengths": [9, 10]}}
HEADER = "name,source,regex,config,R,CRasp,Rinf,R_G,train_bin_acc,longest_bin,longest_bin_acc,perfect_upto\n"


# --- the loader -------------------------------------------------------------------------------------


def test_the_shipped_suite_has_125_languages_that_all_parse():
    langs = load_suite(SUITE)
    assert len(langs) == 125 and len({lang.name for lang in langs}) == 125
    by = {lang.name: lang for lang in langs}
    assert by["1"].regex == "(bbac)*" and by["1"].alphabet == ("a", "b", "c") and by["1"].config == "1l1h64d"
    assert by["1"].labels == {"R": False, "CRasp": True, "Rinf": True, "R_G": True}
    assert by["ldp2"].alphabet == ("a", "b", "c", "d", "e", "x")
    assert by["aa"].alphabet == ("a",) and by["parity"].alphabet == ("a", "b")
    assert by["1"].outcome == {"train_bin_acc": 1.0, "longest_bin": "451-500", "longest_bin_acc": 1.0, "perfect_upto": 500,
                               "generalized": True}
    assert by["100"].outcome["generalized"] is False and by["100"].outcome["longest_bin_acc"] == 0.499
    for lang in langs:
        dfa = lang.dfa()  # every regex parses over its own letters
        assert list(dfa.alphabet) == list(lang.alphabet)
        assert set(lang.alphabet) == {ch for ch in lang.regex if ch.isalpha()}
    assert by["aa"].dfa().accepts(list("aaaa")) and not by["aa"].dfa().accepts(list("aaa"))
    assert by["ab_k"].dfa().accepts(list("abaabbab")) and not by["ab_k"].dfa().accepts(list("abab"))  # + is one-or-more
    assert sum(lang.outcome["generalized"] for lang in langs) == 61
    assert suite_source(SUITE)["commit"].startswith("903fba2")


def test_suite_alphabet():
    assert suite_alphabet("(b|a)*c") == ("a", "b", "c")
    assert suite_alphabet("()") == ("a",)


def test_unknown_suite_and_malformed_rows_name_the_row():
    with pytest.raises(InputError) as err:
        load_suite("no-such-suite")
    assert err.value.field == "suite" and SUITE in err.value.detail
    with pytest.raises(InputError, match="lacks the columns"):
        parse_suite_text("name,regex\nx,a\n")
    with pytest.raises(InputError, match=r"row 2 \('y'\): column CRasp"):
        parse_suite_text(HEADER + "x,lower,a*,1l1h16d,True,True,True,True,1.0,451-500,1.0,500\n"
                                  "y,lower,b*,1l1h16d,True,maybe,True,True,1.0,451-500,1.0,500\n")
    with pytest.raises(InputError, match="duplicate name 'x'"):
        parse_suite_text(HEADER + "x,lower,a*,c,True,True,True,True,,,,\nx,lower,b*,c,True,True,True,True,,,,\n")
    with pytest.raises(InputError, match=r"row 1 \('x'\): column longest_bin_acc"):
        parse_suite_text(HEADER + "x,lower,a*,c,True,True,True,True,1.0,451-500,1.5,500\n")
    (bad,) = parse_suite_text("# a comment\n" + HEADER + "x,lower,(ab,c,True,True,True,True,,,,\n")
    assert bad.outcome["generalized"] is None  # no selected run: unknown, never "failed"
    with pytest.raises(InputError, match=r"suite row 1 \('x'\): regex '\(ab' does not parse") as err:
        bad.dfa()
    assert err.value.field == "suite"


# --- the report -------------------------------------------------------------------------------------


def _lang(name: str, crasp_label: bool, generalized: bool | None) -> SuiteLanguage:
    acc = None if generalized is None else (1.0 if generalized else 0.5)
    return SuiteLanguage(name=name, regex="a*", alphabet=("a",), labels={"R": False, "CRasp": crasp_label, "Rinf": True, "R_G": True},
                         config="1l1h16d", outcome={"train_bin_acc": 1.0, "longest_bin": "451-500", "longest_bin_acc": acc,
                                                    "perfect_upto": None, "generalized": generalized}, row=1)


def _analysis(crasp: bool | None) -> dict[str, Any]:
    return {"fingerprint": "f", "num_states": 1, "classes": {"crasp": {"member": crasp}, "ltl_p": {"member": False}}}


def _record(nope_star: int, longest: int = 500) -> dict[str, Any]:
    return {"longest_tested_length": longest, "setting": "causal",
            "encodings": {"nope": {"longest_perfect_length": nope_star, "reached_longest": nope_star == longest},
                          "rope": {"longest_perfect_length": 51, "reached_longest": False}}}


def test_agreement_arithmetic_from_fake_rows():
    # (product crasp, their CRasp label, their outcome, our NoPE N*)
    rows = [
        suite_row(_lang("p", True, True), _analysis(True), _record(500)),     # all agree
        suite_row(_lang("q", False, True), _analysis(True), _record(100)),    # label differs; outcome agrees; measured differs
        suite_row(_lang("r", False, False), _analysis(False), _record(500)),  # label, outcome agree; measured differs
        suite_row(_lang("s", True, None), _analysis(None), None),             # class undecided, no outcome, not trained
        suite_row(_lang("t", True, False), _analysis(True), None),            # label agrees; outcome differs; not trained
    ]
    agg = agreement(rows)
    # crasp vs label: p agree, q no, r agree, s unknown, t agree -> 3/4
    assert (agg["crasp_vs_label"]["agree"], agg["crasp_vs_label"]["compared"], agg["crasp_vs_label"]["unknown"]) == (3, 4, 1)
    assert agg["crasp_vs_label"]["table"] == {"True/True": 2, "True/False": 1, "False/True": 0, "False/False": 1}
    # prediction vs their outcome: p T/T, q T/T, r F/F, s unknown, t T/F -> 3/4
    assert (agg["prediction_vs_their_outcome"]["agree"], agg["prediction_vs_their_outcome"]["compared"]) == (3, 4)
    # prediction vs measured: p T/T, q T/F, r F/T, s and t not trained -> 1/3, 2 unknown
    m = agg["prediction_vs_measured"]
    assert (m["agree"], m["compared"], m["unknown"]) == (1, 3, 2) and m["rate"] == pytest.approx(1 / 3)
    assert rows[1]["n_star"] == {"nope": 100, "rope": 51} and rows[0]["measured_nope"] is True and rows[3]["measured_nope"] is None
    lines = agreement_lines(agg)
    assert lines[0].startswith("product's crasp class vs their CRasp label: 3/4 (75.0 %), 1 unknown")
    assert "1/3 (33.3 %), 2 unknown" in lines[2]
    md = markdown_suite(rows, agg, ["nope", "rope"])
    assert md.count("\n| ") == 1 + len(rows) and "| q | `a*` |" in md
    csv_rows = suite_csv_rows(rows)
    assert len(csv_rows) == 2 + 2 + 2 + 1 + 1 and csv_rows[0]["encoding"] == "nope" and csv_rows[6]["encoding"] == ""
    assert agreement([])["crasp_vs_label"]["rate"] is None
    # the state-prediction task's own prediction overrides the class
    row = suite_row(_lang("u", True, True), _analysis(True), _record(500), predicted=False)
    assert row["predicted_nope"] is False and agreement([row])["prediction_vs_measured"]["agree"] == 0


# --- running it -------------------------------------------------------------------------------------


def test_cli_suite_limit_2_tiny(tmp_path):
    out = tmp_path / "s"
    args = ["sweep", "--suite", SUITE, "--out", str(out), "--limit", "2", "--overrides", json.dumps(TINY)]  # causal by default
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "| 1 | `(bbac)*` |" in r.output and "| 100 |" in r.output
    assert r.output.rstrip().splitlines()[-3].startswith("product's crasp class vs their CRasp label: 2/2")
    data = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    assert [row["name"] for row in data["rows"]] == ["1", "100"] and data["setting"] == "causal"
    assert {(row["setting"], row["task"]) for row in data["rows"]} == {("causal", "recognition")}
    assert all(rec["spec"]["setting"] == "causal" for rec in data["records"])
    assert data["encodings"] == ["nope", "learned"] and data["source"]["repository"].endswith("bveseli/state-tracking-crasp")
    for row in data["rows"]:
        assert set(row["n_star"]) == {"nope", "learned"} and row["longest_tested_length"] == 10
        assert row["classes"]["crasp"] is row["their"]["CRasp"]
    assert (out / "suite.csv").read_text(encoding="utf-8").startswith("name,regex,alphabet,R,CRasp")
    assert len(list((out / "languages").iterdir())) == 2


def test_cli_suite_bad_input_exits_2(tmp_path):
    for extra, field in ((["--suite", "no-such-suite"], "[suite]"), (["--suite", SUITE, "--only", "zzz"], "[only]"),
                         (["--suite", SUITE, "--setting", "weird"], "[setting]"), (["--limit", "2"], "[suite]"),
                         (["--suite", SUITE, "--setting", "strict", "--task", "state_prediction"], "[task]"),
                         # a census sample's options do not apply to a suite (they were silently ignored)
                         (["--suite", SUITE, "--per-cell", "2", "--limit", "1"], "[per-cell]"),
                         (["--suite", SUITE, "--states", "2", "--limit", "1"], "[states]")):
        r = CliRunner().invoke(app, ["sweep", "--out", str(tmp_path / "x"), *extra])
        assert r.exit_code == 2 and field in r.output, (extra, r.output)
    assert not (tmp_path / "x" / "languages").exists() or not list((tmp_path / "x" / "languages").iterdir())


def test_python_api_suite_only(tmp_path):
    import langclass

    out = langclass.sweep(suite=SUITE, only=["parity", "aa"], setting="strict", out=str(tmp_path), overrides=TINY)
    assert [r["name"] for r in out["rows"]] == ["aa", "parity"]  # the suite's order
    assert {r["setting"] for r in out["rows"]} == {"strict"}
    assert out["agreement"]["crasp_vs_label"]["compared"] == 2
    with pytest.raises(InputError) as err:
        langclass.sweep(suite="nope", out=str(tmp_path))
    assert err.value.field == "suite"
    from langclass.app.usecases.suite import run_suite

    for setting, encodings in (("causal", ["nope", "hard_nope"]), ("strict", ["learned"])):  # as a census sweep: 422
        with pytest.raises(InputError) as err:
            run_suite(SUITE, tmp_path / "bad", setting=setting, encodings=encodings, limit=1, overrides=TINY)
        assert err.value.field == f"encodings[{len(encodings) - 1}]", setting


def test_rest_suite_422_and_queued(make_client: Any, migrated_url: str) -> None:
    client = make_client(migrated_url, worker_slots=0)
    r = client.post("/v1/sweeps", json={"suite": "no-such-suite"})
    assert r.status_code == 422 and "suite" in r.text
    r = client.post("/v1/sweeps", json={"suite": SUITE, "only": ["zzz"]})
    assert r.status_code == 422 and "only" in r.text
    r = client.post("/v1/sweeps", json={"suite": SUITE, "states": 2})
    assert r.status_code == 422 and "states" in r.text
    r = client.post("/v1/sweeps", json={"suite": SUITE, "setting": "strict", "task": "state_prediction"})
    assert r.status_code == 422 and "task" in r.text
    r = client.post("/v1/sweeps", json={"states": 2, "limit": 2})
    assert r.status_code == 422 and "suite" in r.text
    r = client.post("/v1/sweeps", json={"suite": SUITE, "limit": 3, "setting": "strict", "overrides": TINY})
    assert r.status_code == 202, r.text
    spec = r.json()["spec"]
    assert spec["suite"] == SUITE and spec["limit"] == 3 and spec["setting"] == "strict" and spec["runs_bound"] == 3 * 2
    assert "heatmap" not in r.json()["links"] and r.json()["links"]["sweep"]  # a suite has no heat map (it was a 409)
    for body, field in (({"suite": SUITE, "encodings": ["hard_nope"]}, "encodings[0]"),  # not a causal encoding
                        ({"suite": SUITE, "setting": "strict", "encodings": ["learned"]}, "encodings[0]")):
        r = client.post("/v1/sweeps", json=body)
        assert r.status_code == 422 and r.json()["field"] == field, r.text
    assert SUITE in SUITES


def test_worker_runs_a_suite_job(make_client: Any, _migrated_sqlite: str, tmp_path) -> None:
    from conftest import _empty_all_tables

    from langclass.app.execution.worker import Worker, WorkerConfig

    _empty_all_tables(_migrated_sqlite)
    client = make_client(_migrated_sqlite, worker_slots=0)
    job = client.post("/v1/sweeps", json={"suite": SUITE, "only": ["aa"], "task": "state_prediction", "overrides": TINY}).json()
    assert Worker(WorkerConfig(database_url=_migrated_sqlite, lease_s=60, heartbeat_s=0.05)).run_once() == "succeeded"
    done = client.get(f"/v1/sweeps/{job['id']}").json()
    rep = done["report"]
    assert done["status"] == "succeeded" and rep["suite"] == SUITE and [r["name"] for r in rep["rows"]] == ["aa"]
    assert rep["agreement"]["crasp_vs_label"]["compared"] == 1 and "| aa | `(aa)*` |" in rep["markdown"]
    assert rep["rows"][0]["setting"] == "causal" and rep["rows"][0]["task"] == "state_prediction"
    # (aa)*: not in C-RASP, and neither is the prefix language of either state: NoPE not predicted
    assert rep["rows"][0]["predicted_nope"] is False


def test_suite_data_selects_their_config_as_their_readme_says(tmp_path, capsys):
    """bench/suite_data.py on a made-up checkout: accuracy 1.0 on the training bin, then the best
    longest bin, ties bin by bin towards the shortest, then the smallest architecture; lr 1e-4 → smalllr."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("suite_data", Path(__file__).resolve().parents[1] / "bench" / "suite_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "main_language_suite.csv").write_text(
        "name,source,regex,table_formal,config,best_config_larger_train,R,CRasp,Rinf,R_G\n"
        "7,lower,(ab)*,(ab)*,2l1h16dsmalllr,x,False,True,True,True\n"
        "aa,canonical,(aa)*,(aa)*,1l1h16d,None,False,False,False,True\n", encoding="utf-8")

    def line(arch, accs, lr):
        bins = "\t\t".join(f"eval_len{lo}-{hi}_acc: {a}" for (lo, hi), a in zip([(0, 50), (51, 100), (101, 150)], accs))
        return f"{arch}\t\t >> early stop 1.0\t\t {bins} \t\tlr: {lr}\n"

    d = tmp_path / "results" / "main_language_suite" / "hyperparameter-search"
    (d / "lang_id_7").mkdir(parents=True)
    (d / "lang_id_7" / "summary.txt").write_text(
        line("1l1h16d", [0.99, 1.0, 1.0], 0.001)      # not perfect on the training bin: out
        + line("4l4h64d", [1.0, 0.9, 1.0], 0.001)     # ties on the longest bin, loses on 51-100
        + line("2l1h16d", [1.0, 1.0, 1.0], 0.0001)    # ties everywhere with the next: smaller wins
        + line("2l2h16d", [1.0, 1.0, 1.0], 0.001), encoding="utf-8")
    (d / "aa").mkdir()
    (d / "aa" / "summary.txt").write_text(line("1l1h16d", [1.0, 1.0, 0.25], 0.001), encoding="utf-8")
    assert mod.main([str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.err == ""  # both selections are the published config
    a, b = parse_suite_text(out.out)
    assert (a.name, a.config, a.outcome["generalized"], a.outcome["perfect_upto"], a.outcome["longest_bin"]) == ("7", "2l1h16dsmalllr", True, 150, "101-150")
    assert (b.outcome["generalized"], b.outcome["longest_bin_acc"], b.outcome["perfect_upto"]) == (False, 0.25, 100)
