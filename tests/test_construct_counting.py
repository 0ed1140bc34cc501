"""The C-RASP construction (setting "causal"): compiled models against the C-RASP interpreter on every
short word, the plan's size and shape, the certified lengths, the spec, CLI and Python entry points."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings

from langclass.core.base.errors import InputError, LimitExceeded, UnsupportedError
from langclass.core.logic.crasp import CraspOp, CraspProgram
from langclass.core.precision.counting import certified_counting_length, channel_certified_n
from langclass.models.construct.counting import CountingTransformer, build_counting_transformer
from langclass.models.construct.counting_plan import plan_counting, planned_counting_parameters
from langclass.models.nn.tokens import BOS, NUM_SPECIAL
from langclass.models.construct.verify_causal import construct_causal_program, run_causal_construction, verify_counting_model

from _crasp_programs import ORACLES, ab_ba_star, majority, programs


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """The models are tiny: one intra-op thread (shared CPUs)."""


def _all_short(prog: CraspProgram) -> int:
    return 10 if len(prog.alphabet) == 2 else 6


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("key", sorted(ORACLES))
def test_model_equals_interpreter_on_every_short_word(key, dtype):
    """Decision and every Boolean of the program (exactly 0/1 at every position) against the
    interpreter; the interpreter against the independent oracle."""
    make, oracle = ORACLES[key]
    prog = make()
    model = build_counting_transformer(prog, dtype)
    n = _all_short(prog)
    if dtype == "bfloat16":  # within the worst-case certified length of bfloat16
        n = min(n, certified_counting_length(model.plan.channel_bounds(), "bfloat16"))
    out = verify_counting_model(model, prog, None, all_words_up_to=n, random_lengths=[])
    acc = out["all_words"]
    assert acc["checked"] == sum(len(prog.alphabet) ** L for L in range(n + 1))
    assert acc["wrong"] == 0 and acc["sim_inexact"] == 0, acc
    rng = np.random.default_rng(1)
    for _ in range(20):
        w = "".join(rng.choice(list(prog.alphabet), size=int(rng.integers(0, 30))))
        ids = torch.tensor([[BOS] + [NUM_SPECIAL + prog.alphabet.index(c) for c in w]])
        with torch.no_grad():
            assert (model.decide(ids).item() > 0) == oracle(w) == prog.evaluate(w)


def test_depth_and_constants_shape_the_model():
    """The depth-3 program with constants, scalar multiples, ¬ and true: three attention layers
    (one per count depth), constants carried by BOS in the value projection."""
    prog = ORACLES["constants_depth3"][0]()
    plan = plan_counting(prog)
    assert prog.depth() == 3
    assert plan.summary()["attention_layers"] == 3 == plan.summary()["heads"]
    bos_values = {c.op: c.bos_value for c in plan.channels}
    # P1: 2·A ≥ B + 1  ⇔  2A − B − 1 + 1 ≥ 1: k = 0, value at BOS −1/2; C3: N1 ≥ 3C − 2 ⇔ k = 2 + 1 → 5/2
    assert bos_values["P1"] == Fraction(-1, 2) and bos_values["P2"] == Fraction(5, 2)
    assert bos_values["Out"] == Fraction(3, 2)  # 2·N2 > L − 2: k = 2


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_planned_parameters_equal_the_built_model(key):
    prog = ORACLES[key][0]()
    plan = plan_counting(prog)
    model = CountingTransformer(plan)
    assert planned_counting_parameters(plan) == sum(p.numel() for p in model.parameters())
    assert model.describe()["parameters"] == planned_counting_parameters(plan)
    assert plan.summary()["attention_layers"] == prog.depth()


def test_uniform_attention_and_pair_normalization_values():
    """Layer 1 of majority: the channel is (#a − #b − 1/2)/(i + 1) before the normalization and ±1
    after it (the exact values at every position)."""
    prog = majority()
    model = build_counting_transformer(prog, "float64")
    w = "aabbbab"
    ids = torch.tensor([[BOS] + [NUM_SPECIAL + prog.alphabet.index(c) for c in w]])
    x = model.embed(ids)
    pos = model.encoding.position_ids(ids.shape[1])
    z = (x + model.attn[0](x, pos, None, model.encoding))[0]
    ch = model.plan.channels[0]
    d = np.cumsum([0] + [1 if c == "a" else -1 for c in w])
    want = (d - 0.5) / np.arange(1, len(w) + 2)
    assert np.allclose(z[:, ch.coord].numpy(), want, atol=1e-15) and np.allclose(z[:, ch.coord + 1].numpy(), -want)
    y = model.norms[0](z[None])[0]
    assert np.allclose(y[:, ch.coord].numpy(), np.sign(want), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_programs_compile_exactly(prog):
    model = build_counting_transformer(prog, "float32")
    assert model.plan.summary()["attention_layers"] == prog.depth()  # one attention layer per count depth
    out = verify_counting_model(model, prog, None, all_words_up_to=6, random_lengths=[40, 200])
    for acc in (out["all_words"], out["random"]):
        assert acc["wrong"] == 0 and acc["sim_inexact"] == 0, (prog.render(), acc)


def test_incremental_evaluation_equals_forward():
    prog = ab_ba_star()
    model = build_counting_transformer(prog)
    rng = np.random.default_rng(3)
    ids = torch.tensor([[BOS] + list(NUM_SPECIAL + rng.integers(0, 2, 57))])
    with torch.no_grad():
        full = model(ids)
        caches, outs = None, []
        for s0 in range(0, ids.shape[1], 10):
            h, caches = model.extend(ids[:, s0:s0 + 10], caches)
            outs.append(h)
    inc = torch.cat(outs, 1)
    a, b = model.boolean_values(full), model.boolean_values(inc)
    assert all(torch.equal(a[k], b[k]) for k in a)


# ---------------------------------------------------------------- precision
def test_certified_length_is_the_last_length_satisfying_the_condition():
    u = Fraction(1, 2 ** 24)
    for bos, v in [(Fraction(-3, 2), 1), (Fraction(5, 2), 3), (Fraction(-1, 2), 7)]:
        n = channel_certified_n(bos, v, v, "float32")

        def holds(m):
            g = m * u / (1 - m * u)
            return g * (abs(bos) + (m - 1) * v) < Fraction(1, 2)
        assert holds(n) and not holds(n + 1)
        assert abs(n - (1 / (2 * float(u) * v)) ** 0.5) < 5  # ≈ sqrt(1/(2uV)) for large n


def test_certified_lengths_of_the_hand_written_programs():
    ch = plan_counting(ab_ba_star()).channel_bounds()
    assert certified_counting_length(ch, "float32") == 2894
    assert certified_counting_length(ch, "bfloat16") == 9
    assert certified_counting_length(ch, "bfloat16", "float32") == 2894
    assert certified_counting_length(ch, "float64") > 10 ** 7
    # no comparison: exact at every length
    p = CraspProgram(("a",), (CraspOp("Qa", "symbol", ("a",)),), "Qa", False)
    assert certified_counting_length(plan_counting(p).channel_bounds(), "float32") is None


def test_value_projection_must_be_exact():
    assert channel_certified_n(Fraction(1, 2), 2 ** 23, 2 ** 23, "float32") == 0
    assert channel_certified_n(Fraction(1, 2), 200, 200, "bfloat16") == 0
    assert channel_certified_n(Fraction(1, 2), 100, 100, "bfloat16") > 0


@pytest.mark.slow
@pytest.mark.parametrize("key", ["majority", "ab_ba_star"])
def test_float32_model_exact_on_tight_words_just_below_the_certified_length(key):
    """Words whose final comparison has the smallest margin (#a − #b ∈ {0, 1}) and random words, at
    lengths just below the certified float32 length."""
    make, oracle = ORACLES[key]
    prog = make()
    model = build_counting_transformer(prog, "float32")
    n = certified_counting_length(plan_counting(prog).channel_bounds(), "float32")
    rng = np.random.default_rng(0)
    L = n - (n % 2)
    words = ["ab" * (L // 2), "ba" * (L // 2), "ab" * (L // 2 - 1) + "a", "".join(rng.permutation(list("ab" * (L // 2))))]
    for w in words:
        ids = torch.tensor([[BOS] + [NUM_SPECIAL + prog.alphabet.index(c) for c in w]])
        with torch.no_grad():
            assert (model.decide(ids).item() > 0) == oracle(w), (key, len(w))


# ---------------------------------------------------------------- spec and entry points
def test_construct_causal_program_ab_ba_star_to_length_12_and_2000():
    r = construct_causal_program(ab_ba_star(), regex="(ab|ba)*", all_words_up_to=12, random_words=4,
                                 random_max_length=2000)
    assert r["exact"] and r["agrees_with_dfa"] and r["setting"] == "causal"
    assert r["all_words_up_to"] == 12 and r["words_checked"] == 2 ** 13 - 1
    assert r["random_words_up_to"] == 2000 and r["random_words_checked"] == 4
    assert r["model"]["mask"] == "nonstrict" and r["encoding"] == "nope" and r["model"]["program_depth"] == 2
    assert r["n_max"] == r["precision"]["float32"] == 2894
    assert CraspProgram.from_json(r["crasp"]["program"]) == ab_ba_star()
    json.dumps(r)


def test_words_beyond_the_certified_length_are_reported_apart():
    r = construct_causal_program(majority(), regex="(a|b)*", dtype="bfloat16", all_words_up_to=12,
                                 random_words=3, random_max_length=60)
    assert r["n_max"] == 10 and r["all_words_up_to"] == 10 and r["random_words_up_to"] <= 10
    assert r["beyond_n_max"]["words_checked"] == 3 and r["beyond_n_max"]["longest"] == 60
    assert r["agrees_with_dfa"] is False  # the program is majority, the reference language is everything


def test_program_against_a_wrong_reference_language_is_reported():
    r = construct_causal_program(ab_ba_star(), regex="(ab)*", all_words_up_to=6, random_words=0)
    # the model computes its program exactly, but the program is another language's: not "exact"
    assert r["decisions_exact"] and r["simulation_exact"] and not r["exact"]
    assert r["agrees_with_dfa"] is False and r["first_dfa_mismatch"]["word"] == "ba"


@pytest.mark.parametrize("options, field", [
    ({"attention": "hard"}, "options.attention"), ({"mask": "strict"}, "options.mask"),
    ({"route": "cascade"}, "options.route"), ({"y_mode": "recency"}, "options.y_mode"), ({"g": 0.5}, "options.g"),
    ({"setting": "causl"}, "options.setting"), ({"dtype": "int8"}, "options.dtype"),
    ({"crasp_program": {"alphabet": ["a"]}}, "program"),
])
def test_bad_causal_options_are_input_errors(options, field):
    spec = {"regex": "(ab)*", "alphabet": ["a", "b"], "setting": "causal",
            "crasp_program": majority().to_json(), **options}
    with pytest.raises(InputError) as e:
        run_causal_construction(spec) if options.get("setting") != "causl" else __import__(
            "langclass.models.construct.verify", fromlist=["x"]).run_construction(spec)
    assert e.value.field == field


def test_spec_errors_of_the_setting():
    from langclass.models.construct.verify import run_construction, validate_spec

    with pytest.raises(InputError, match="causal setting only"):
        validate_spec({"regex": "a", "alphabet": ["a", "b"], "crasp_program": majority().to_json()})
    with pytest.raises(InputError, match="not 'formula'"):
        validate_spec({"formula": "a", "alphabet": ["a", "b"], "setting": "causal"})
    with pytest.raises(InputError, match="alphabet differs"):
        run_construction({"regex": "a", "alphabet": ["a", "c"], "setting": "causal", "crasp_program": majority().to_json()})
    with pytest.raises(LimitExceeded):
        validate_spec({"setting": "causal", "crasp_program": ab_ba_star().to_json(), "max_parameters": 100})
    validate_spec({"setting": "causal", "crasp_program": ab_ba_star().to_json()})  # no error


def _fake_decider(monkeypatch, result):
    from langclass.core.algebra.classes import REGISTRY

    class D:
        def decide(self, ctx):
            return result
    monkeypatch.setitem(REGISTRY, "crasp", D())


class _Res:
    def __init__(self, member, cert=None, reason="r"):
        self.member, self.reason, self.witness = member, reason, None
        self.certificate = None if cert is None else type("C", (), {"to_dict": lambda s: cert})()


def test_program_from_the_certificate_and_refusals(monkeypatch):
    from langclass.models.construct.verify import run_construction

    spec = {"regex": "(ab|ba)*", "alphabet": ["a", "b"], "setting": "causal", "random_words": 2, "all_words_up_to": 6}
    _fake_decider(monkeypatch, _Res(True, {"program": ab_ba_star().to_json()}))
    r = run_construction(spec)
    assert r["exact"] and r["agrees_with_dfa"] and r["crasp"]["source"] == "crasp certificate"
    _fake_decider(monkeypatch, _Res(False, reason="states 0 and 1 are not separated"))
    with pytest.raises(UnsupportedError, match="no C-RASP program") as e:
        run_construction(spec)
    assert isinstance(e.value, InputError)
    _fake_decider(monkeypatch, _Res(None, reason="limit"))
    with pytest.raises(UnsupportedError, match="left open"):
        run_construction(spec)
    _fake_decider(monkeypatch, _Res(True, {"potentials": []}))
    with pytest.raises(UnsupportedError, match="no program"):
        run_construction(spec)
    _fake_decider(monkeypatch, _Res(True, {"program": {"alphabet": ["a"], "ops": [], "output": "x",
                                                       "accepts_empty": True}}))
    with pytest.raises(InputError):
        run_construction(spec)


def test_python_api_setting_causal():
    import langclass

    r = langclass.construct("(ab|ba)*", alphabet="ab", setting="causal", crasp_program=ab_ba_star().to_json(),
                            all_words_up_to=8, random_words=2, random_max_length=300)
    assert r["exact"] and r["setting"] == "causal" and r["random_words_up_to"] == 300


def test_cli_setting_causal_with_a_program_file(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    f = tmp_path / "p.json"
    f.write_text(json.dumps(ab_ba_star().to_json()))
    runner = CliRunner()
    res = runner.invoke(app, ["construct", "--regex", "(ab|ba)*", "--alphabet", "ab", "--setting", "causal",
                              "--crasp-program", str(f), "--all-words", "8", "--random-words", "2"])
    assert res.exit_code == 0, res.output
    assert "setting    causal" in res.output and "mask nonstrict" in res.output and "exact      True" in res.output
    assert "certified  word lengths: float32 2,894" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(app, ["construct", "--regex", "a", "--alphabet", "ab", "--setting", "causal",
                              "--crasp-program", str(bad)])
    assert res.exit_code == 2
    res = runner.invoke(app, ["construct", "--regex", "a", "--alphabet", "ab", "--setting", "nope"])
    assert res.exit_code == 2 and "--setting" in res.output


@pytest.mark.skipif("crasp" not in __import__("langclass.core.algebra.classes", fromlist=["REGISTRY"]).REGISTRY,
                    reason="needs the crasp decider")
def test_cli_with_the_crasp_certificate():
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app

    runner = CliRunner()
    res = runner.invoke(app, ["construct", "--regex", "(ab|ba)*", "--alphabet", "ab", "--setting", "causal",
                              "--random-words", "2", "--random-max-length", "2000"])
    assert res.exit_code == 0, res.output
    assert "exact      True   all words ≤ 12 (8191 words), random words ≤ 2000" in res.output
    res = runner.invoke(app, ["construct", "--regex", "(aa)*", "--alphabet", "a", "--setting", "causal"])
    assert res.exit_code == 2 and "no C-RASP program" in res.output


# ---------------------------------------------------------------- job API and page
_HAS_DECIDER = "crasp" in __import__("langclass.core.algebra.classes", fromlist=["REGISTRY"]).REGISTRY


def _store(client, regex: str, alphabet: list[str]) -> str:
    r = client.post("/v1/languages", json={"regex": regex, "alphabet": alphabet})
    assert r.status_code in (200, 201), r.text
    return r.json()["id"]


@pytest.mark.slow
def test_construct_job_in_the_causal_setting_and_its_page(make_client, sqlite_url):
    """A job spec with setting causal and a given program runs and its page names the setting; bad
    causal options are 422 naming the option."""
    import time

    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, job_lease_s=5.0, worker_slots=1)
    lid = _store(client, "(ab|ba)*", ["a", "b"])
    body = {"kind": "construct", "setting": "causal", "crasp_program": ab_ba_star().to_json(), "all_words_up_to": 6,
            "random_words": 2, "random_max_length": 100}
    r = client.post(f"/v1/languages/{lid}/experiments", json=body)
    assert r.status_code == 202, r.text
    jid = r.json()["id"]
    end = time.monotonic() + 90
    while (job := client.get(f"/v1/jobs/{jid}").json())["status"] not in ("succeeded", "failed") and time.monotonic() < end:
        time.sleep(0.1)
    assert job["status"] == "succeeded", job.get("error")
    res = job["result"]
    assert res["exact"] and res["agrees_with_dfa"] and res["setting"] == "causal" and res["mask"] == "nonstrict"
    page = client.get(f"/jobs/{jid}").text
    assert "causal setting (C-RASP program of depth 2, non-strict mask)" in page and "N_max = <b>2894</b>" in page
    bad = client.post(f"/v1/languages/{lid}/experiments", json={**body, "mask": "strict"})
    assert bad.status_code == 422 and bad.json()["field"] == "options.mask"


@pytest.mark.skipif(not _HAS_DECIDER, reason="needs the crasp decider")
def test_construct_job_refuses_a_language_without_a_crasp_program(make_client, sqlite_url):
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, worker_slots=0)
    lid = _store(client, "(aa)*", ["a", "b"])
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct", "setting": "causal"})
    assert r.status_code == 422 and "no C-RASP program" in r.json()["detail"], r.text


def test_verification_catches_a_tampered_model():
    """The checks can fail: a value weight off by one (a count of the wrong letter) and a flipped
    readout are both reported, with the first failing word."""
    prog = ab_ba_star()
    model = build_counting_transformer(prog)
    with torch.no_grad():
        model.attn[0].v_proj.weight[0, model.plan.c_letter["a"]] += 1.0
    out = verify_counting_model(model, prog, None, all_words_up_to=6, random_lengths=[])
    assert out["all_words"]["sim_inexact"] > 0 and out["all_words"]["first_inexact"] is not None
    model = build_counting_transformer(prog)
    with torch.no_grad():
        model.readout.weight.mul_(-1.0)
        model.readout.bias.mul_(-1.0)
    out = verify_counting_model(model, prog, None, all_words_up_to=4, random_lengths=[])
    assert out["all_words"]["wrong"] == out["all_words"]["checked"] and out["all_words"]["sim_inexact"] == 0
    assert out["all_words"]["first_failure"]["word"] == ""


@pytest.mark.skipif(not _HAS_DECIDER, reason="needs the crasp decider")
@settings(max_examples=40, deadline=None)
@given(__import__("_local_brute").small_dfas(n_max=4, k_max=2))
def test_certificate_programs_of_random_languages_compile_exactly(dfa):
    """Every crasp member's certificate program compiles into a model that agrees with the interpreter
    and the DFA on all words up to 7 and on random words (one attention layer per count depth)."""
    from langclass.core.algebra.classes import REGISTRY, Context
    from langclass.models.construct.verify_causal import crasp_program_of

    if not REGISTRY["crasp"].decide(Context(dfa)).member:
        return
    prog, _ = crasp_program_of(dfa)
    model = build_counting_transformer(prog)
    assert model.plan.summary()["attention_layers"] == prog.depth()
    out = verify_counting_model(model, prog, dfa, all_words_up_to=7, random_lengths=[60, 300])
    for acc in (out["all_words"], out["random"]):
        assert acc["wrong"] == 0 and acc["sim_inexact"] == 0 and acc["program_dfa_mismatch"] == 0, acc


def test_comparisons_of_constants_are_folded():
    ops = (CraspOp("Qb", "symbol", ("b",)), CraspOp("K", "linear", ((), 2)), CraspOp("L", "linear", ((), 3)),
           CraspOp("T", "compare", ("K", "<", "L")), CraspOp("F", "compare", ("K", "==", "L")),
           CraspOp("NF", "not", ("F",)), CraspOp("Out", "and", ("Qb", "T", "NF")))
    prog = CraspProgram(("a", "b"), ops, "Out", False)
    model = build_counting_transformer(prog)
    assert model.plan.summary()["attention_layers"] == 0 == prog.depth() and not model.plan.channels
    out = verify_counting_model(model, prog, None, all_words_up_to=6, random_lengths=[])
    assert out["all_words"]["wrong"] == 0 and out["all_words"]["sim_inexact"] == 0


def test_a_program_whose_values_float32_cannot_hold_is_certified_only_for_the_empty_word():
    big = 2 ** 25
    ops = (CraspOp("Qa", "symbol", ("a",)), CraspOp("A", "count", ("Qa",)), CraspOp("X", "linear", (((big, "A"),), 0)),
           CraspOp("K", "linear", ((), 1)), CraspOp("Out", "compare", ("X", ">=", "K")))
    prog = CraspProgram(("a", "b"), ops, "Out", False)
    assert certified_counting_length(plan_counting(prog).channel_bounds(), "float32") == 0
    assert certified_counting_length(plan_counting(prog).channel_bounds(), "float64") > 1000
    r = construct_causal_program(prog, all_words_up_to=4, random_words=2, random_max_length=20)
    assert r["n_max"] == 0 and r["all_words_up_to"] == 0 and r["words_checked"] == 1
    assert r["beyond_n_max"]["words_checked"] == 2


def test_or_of_disjoint_cubes_is_one_feed_forward_level():
    """(Q_a ∧ X) ∨ (Q_b ∧ Y) is the sum of its two cubes (different letters: at most one holds), one
    level; the ∧ operations read only there are not built. Cubes sharing a letter keep two levels."""
    def prog(second_letter):
        ops = (CraspOp("Qa", "symbol", ("a",)), CraspOp("Q2", "symbol", (second_letter,)),
               CraspOp("A", "count", ("Qa",)), CraspOp("K", "linear", ((), 1)),
               CraspOp("X", "compare", ("A", ">", "K")), CraspOp("Y", "compare", ("A", "<=", "K")),
               CraspOp("C1", "and", ("Qa", "X")), CraspOp("C2", "and", ("Q2", "Y")), CraspOp("Out", "or", ("C1", "C2")))
        return CraspProgram(("a", "b"), ops, "Out", True)
    flat, nested = plan_counting(prog("b")), plan_counting(prog("a"))
    assert len(flat.layers) == 2 and len(nested.layers) == 3
    assert "C1" not in flat.literals and "C1" in nested.literals
    for p in (prog("b"), prog("a")):
        out = verify_counting_model(build_counting_transformer(p), p, None, all_words_up_to=8, random_lengths=[100])
        assert out["all_words"]["wrong"] == 0 == out["all_words"]["sim_inexact"] == out["random"]["wrong"]


def test_strict_names_the_fixed_setting_as_in_training() -> None:
    from langclass.models.construct.options import is_causal

    for setting in ("fixed", "strict", None):
        assert is_causal({"regex": "(ab)*", "alphabet": ["a", "b"], "options": {"setting": setting}}) is False
    assert is_causal({"regex": "(ab)*", "alphabet": ["a", "b"], "options": {"setting": "causal"}}) is True


def test_construct_job_names_its_own_setting_field(make_client, sqlite_url):
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, worker_slots=0)
    lid = _store(client, "(ab)*", ["a", "b"])
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct", "setting": "Strict"})
    assert r.status_code == 422 and r.json()["field"] == "setting" and "'Strict'" in r.json()["detail"], r.text
    r = client.post(f"/v1/languages/{lid}/experiments", json={"kind": "construct", "setting": "strict"})
    assert r.status_code == 202, r.text
