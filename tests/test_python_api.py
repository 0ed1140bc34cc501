"""The Python API (``langclass.classify`` / ``construct`` / ``train``), the examples of docs/python.md,
and the light import: ``import langclass`` and a classification load no torch, FastAPI or SQLAlchemy."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import langclass
from langclass.core.classification.analysis import analyze
from langclass.core.base.errors import AlphabetError, DfaFormatError, InputError
from langclass.core.logic.formulas import formula_to_dfa, parse_formula
from langclass.core.ingest.parse import parse_dfa_json, parse_regex

from _ground_truth import EXPECTED_TO_KEY, LANGUAGES

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "fastapi", "sqlalchemy", "ray", "starlette", "matplotlib")


def _modules_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_and_classify_load_no_heavy_module() -> None:
    assert _modules_after("import langclass") == []
    assert _modules_after("import langclass\nr = langclass.classify('(ab)*', alphabet='ab')\nr._repr_html_()\nr.to_dict()") == []


@pytest.mark.slow
def test_docs_python_md_examples_run() -> None:
    import torch

    torch.set_num_threads(1)
    failed, attempted = doctest.testfile(str(ROOT / "docs" / "python.md"), module_relative=False,
                                         optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert attempted >= 30
    assert failed == 0


@pytest.mark.parametrize("lang", LANGUAGES[:12], ids=lambda lang: lang["id"])
def test_classify_agrees_with_core_and_ground_truth(lang: dict) -> None:
    r = langclass.classify(lang["regex"], alphabet=lang["alphabet"])
    assert r.id == parse_regex(lang["regex"], lang["alphabet"]).fingerprint()
    direct = analyze(parse_regex(lang["regex"], lang["alphabet"]))
    assert r.members == direct.members
    for gt_key, key in EXPECTED_TO_KEY.items():
        if gt_key in lang["expected"]:
            assert r.classes[key].member == lang["expected"][gt_key], key
    # the DFA form (with the ground truth's own state names) is the same language
    d = langclass.classify(dfa={"alphabet": lang["alphabet"], **lang["dfa"]})
    assert d.id == r.id
    names = {n for group in d.state_names.values() for n in group}
    assert names <= {str(s) for s in lang["dfa"]["states"]} and names


def test_state_names_follow_minimization() -> None:
    doc = {"alphabet": ["a"], "states": [0, 1, 2, 3], "initial": 0, "accepting": [0, 2],
           "transitions": {"0": {"a": 1}, "1": {"a": 2}, "2": {"a": 3}, "3": {"a": 0}}}
    r = langclass.classify(dfa=json.dumps(doc))
    assert r.dfa.num_states == 2 and r.state_names == {0: ("0", "2"), 1: ("1", "3")}
    # each named state really behaves like the canonical state it is mapped to
    m = parse_dfa_json(doc)
    for q, names in r.state_names.items():
        for n in names:
            word = ["a"] * int(n)
            assert m.run(word) == q


def test_formula_and_dfa_value() -> None:
    f = langclass.classify(formula="Y a", alphabet=["a", "b"])
    expected = formula_to_dfa(parse_formula("Y a", ["a", "b"]), ["a", "b"]).canonical()
    assert f.id == expected.fingerprint() and f.source["kind"] == "formula"
    assert langclass.classify(dfa=expected).id == f.id


def test_bad_inputs_raise_named_errors() -> None:
    with pytest.raises(AlphabetError):
        langclass.classify("(ab)*")
    with pytest.raises(InputError) as err:
        langclass.classify("a", alphabet="a", formula="a")
    assert err.value.field == "dfa" or err.value.field == "formula"
    with pytest.raises(DfaFormatError):
        langclass.classify(dfa=[1, 2])
    with pytest.raises(AlphabetError):
        langclass.classify("a", alphabet=3)  # type: ignore[arg-type]


def test_repr_svg_is_well_formed_and_has_every_state() -> None:
    r = langclass.classify("(a|b)*a(a|b)", alphabet="ab")
    root = ET.fromstring(r._repr_svg_())
    ns = "{http://www.w3.org/2000/svg}"
    states = [g for g in root.iter(f"{ns}g") if (g.get("class") or "").startswith("state")]
    assert sorted(int(g.get("data-state")) for g in states) == list(range(r.dfa.num_states))
    accepting = {int(g.get("data-state")) for g in states if "accepting" in g.get("class")}
    assert accepting == set(r.dfa.accepting_states)
    html = r._repr_html_()
    assert html.count("<tr>") == len(r.classes) + 1
    ab = langclass.classify("(ab)*", alphabet="ab")._repr_html_()
    assert "u=a, v=b" in ab  # the LTL[P] witness words, shown as words


def test_run_result_is_a_mapping_over_its_record() -> None:
    from collections.abc import Mapping

    from langclass.api import RunResult

    r = RunResult("construct", {"exact": True, "encoding": "nope", "all_words_up_to": 6})
    assert isinstance(r, Mapping)
    assert "exact" in r and 0 not in r and "missing" not in r
    assert list(r) == list(r.keys()) == ["exact", "encoding", "all_words_up_to"]
    assert len(r) == 3 and dict(r) == r.record and r.get("missing", 7) == 7
    assert r["exact"] is True
    with pytest.raises(KeyError):
        r["missing"]


def test_docs_name_every_error_class_and_its_module() -> None:
    """docs/python.md lists every public error class of ``langclass.core.base.errors`` (a new user
    looked for ``DfaFormatError``'s import path and found none)."""
    import inspect
    from pathlib import Path

    from langclass.core.base import errors

    text = (Path(__file__).resolve().parents[1] / "docs" / "python.md").read_text(encoding="utf-8")
    assert "langclass.core.base.errors" in text
    names = [n for n, c in vars(errors).items()
             if inspect.isclass(c) and issubclass(c, errors.LangclassError) and c.__module__ == errors.__name__]
    missing = [n for n in names if f"`{n}`" not in text]
    assert not missing, missing
