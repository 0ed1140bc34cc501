"""The plan stage of the constructions on its own (issue 12): torch-free plans with the expected
layer schedule, ReLU units that compute their Boolean functions exactly, and plan → assembly →
exact simulation on every word up to length 8."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from langclass.core.logic import formulas as F
from langclass.core.logic.brasp import DYCK_1_DEPTH_2, formula_to_brasp, parse_program, run_program
from langclass.core.base.errors import LimitExceeded
from langclass.core.logic.formulas import truth_table
from langclass.models.construct.brasp_plan import plan_brasp
from langclass.models.construct.gates import (
    MAX_FFN_INPUTS, Gate, Literal, ReluUnit, dnf_units, evaluate_expr, gate_units,
)
from langclass.models.construct.plan import ConstructionOptions, plan_formula

ROOT = Path(__file__).resolve().parents[1]


def _relu_sum(units: list[ReluUnit], x: dict[int, float], out: int) -> float:
    return sum(u.weight * max(0.0, sum(w * x.get(c, 0.0) for c, w in u.inputs) + u.bias) for u in units if u.out == out)


def test_plans_load_no_torch():
    """Planning a formula and a B-RASP program imports neither torch nor the assembly modules."""
    code = ("import sys; from langclass.models.construct.plan import plan_formula; "
            "from langclass.models.construct.brasp_plan import plan_brasp; "
            "from langclass.core.logic.brasp import DYCK_1_DEPTH_2, parse_program; "
            "p = plan_formula('MOD(2,1) & Y a | P b', ['a', 'b']); q = plan_brasp(parse_program(DYCK_1_DEPTH_2, ['a', 'b'])); "
            "assert p.summary()['heads'] > 0 and q.summary()['heads'] > 0; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    loaded = set(out.stdout.split())
    assert "langclass.models.construct.plan" in loaded and "langclass.models.construct.brasp_plan" in loaded
    assert not {"torch", "langclass.models.construct.soft", "langclass.models.construct.hard",
                "langclass.models.construct.assembly"} & loaded


def test_schedule_of_a_y_formula():
    """P(b ∧ Y a) with conventional RoPE: layer 0 holds the Y head and the P⊤ head its gate needs, the
    gate Y¹a ∧ P⊤ runs in layer 0's FFN, b ∧ Y a in layer 1's FFN (an FFN-only layer), the outer P in
    layer 2's attention."""
    p = plan_formula("P(b & Y a)", ["a", "b"])
    assert [[h.kind for h in lp.heads] for lp in p.layers] == [["Y", "P"], [], ["P"]]
    assert [len(lp.gates) for lp in p.layers] == [1, 1, 0]
    assert [lp.encoding for lp in p.layers] == [0, -1, 0]
    assert [e.family for e in p.encodings] == ["rope"] and p.encoding_name == "rope"
    assert dict(p.heads_by_kind) == {"P": 2, "MOD": 0, "Y": 1} and p.offsets == (1,) and p.moduli == ()
    assert p.d_model == 4 + 2 + 3 + 2  # BOS, EOS, notbos, zero + letters + heads + gates
    assert p.summary()["ffn_units"] == 2  # two binary ∧ gates, one unit each
    root = F.parse_formula("P(b & Y a)", ["a", "b"])
    assert p.literals[root].neg and p.times[root] == 5  # Pψ = notbos − head, written by layer 2's attention
    assert p.d_head == 4 and p.pair_y == 0 and p.pair_flat == 1 and p.C_y is not None


def test_plans_are_pure_and_frozen():
    """Planning twice gives equal plans; a plan and its mappings cannot be changed."""
    import dataclasses

    a, b = plan_formula("MOD(2,1) & Y a | P b", ["a", "b"]), plan_formula("MOD(2,1) & Y a | P b", ["a", "b"])
    assert a == b and a is not b
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.C_p = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.literals[F.TOP] = Literal(0)  # type: ignore[index]
    q = plan_brasp(parse_program(DYCK_1_DEPTH_2, ["a", "b"]))
    assert q == plan_brasp(parse_program(DYCK_1_DEPTH_2, ["a", "b"]))
    with pytest.raises(TypeError):
        q.coord_of["x"] = 0  # type: ignore[index]


def test_schedule_of_mod_and_recency_formulas():
    p = plan_formula("MOD(3,2) & MOD(5,0)", ["a"])
    assert [[h.kind for h in lp.heads] for lp in p.layers] == [["MOD", "P", "MOD"], []]
    assert [[g.kind for g in lp.gates] for lp in p.layers] == [["and", "and"], ["and"]]  # two P⊤ gates, then ∧
    assert p.moduli == (3, 5) and dict(p.pair_of_mod) == {3: 0, 5: 1} and p.d_head == 6
    assert dict(p.encodings[0].kwargs())["periods"] == [3, 5, 1]
    # recency: Y^2 a = Y(Y a), two stacked Y heads in two layers, each with its own ALiBi
    r = plan_formula("Y^2 a", ["a", "b"], ConstructionOptions(y_mode="recency"))
    assert [[h.kind for h in lp.heads] for lp in r.layers] == [["Y"], ["Y"]]
    assert [e.family for e in r.encodings] == ["alibi", "alibi"] and r.offsets == ()
    assert r.encodings[0].kwargs()["slopes"] == [r.recency_slope] and r.recency_slope >= r.f_large


def test_gate_units_compute_their_gates_exactly():
    """∧, ∨ (any arity) and ↔ over plain and negated literals: the units' output is the gate's value at
    every non-BOS position and 0 at BOS."""
    notbos = 0
    for kind, n in [("and", 1), ("and", 2), ("and", 3), ("or", 1), ("or", 2), ("or", 3), ("iff", 2)]:
        for negs in itertools.product([False, True], repeat=n):
            coords = [1 + t % 2 for t in range(n)]  # repeated coordinates on purpose (a ∧ ¬a …)
            lits = tuple(Literal(c, neg) for c, neg in zip(coords, negs))
            units = gate_units(Gate(kind, lits, 9), notbos)
            for bits in itertools.product([0.0, 1.0], repeat=2):
                x = {notbos: 1.0, 1: bits[0], 2: bits[1]}
                vals = [bool(x[lit.coord]) != lit.neg for lit in lits]
                want = all(vals) if kind == "and" else any(vals) if kind == "or" else vals[0] == vals[1]
                assert _relu_sum(units, x, 9) == float(want), (kind, negs, bits)
            assert _relu_sum(units, {}, 9) == 0.0  # BOS: notbos = 0 and every literal coordinate 0
    with pytest.raises(ValueError):
        gate_units(Gate("xor", (Literal(1), Literal(2)), 3), notbos)


def _random_expr(rng: np.random.Generator, coords: list[int], depth: int):
    if depth == 0 or rng.random() < 0.25:
        return ("c", int(rng.choice(coords))) if rng.random() < 0.9 else ("k", bool(rng.integers(2)))
    kind = ["not", "and", "or"][int(rng.integers(3))]
    if kind == "not":
        return ("not", _random_expr(rng, coords, depth - 1))
    return (kind, tuple(_random_expr(rng, coords, depth - 1) for _ in range(int(rng.integers(1, 4)))))


def test_dnf_units_equal_their_truth_tables():
    """Random Boolean expressions over ≤ 6 coordinates: the disjoint-cube units give exactly 0/1, equal to
    the expression, on every assignment; a target reading more than MAX_FFN_INPUTS coordinates is refused."""
    rng = np.random.default_rng(7)
    for t in range(200):
        coords = sorted(rng.choice(20, size=int(rng.integers(1, 7)), replace=False).tolist())
        e = _random_expr(rng, coords, 4)
        units, width = dnf_units([(99, e)])
        assert width <= len(coords)
        for bits in itertools.product([False, True], repeat=len(coords)):
            env = dict(zip(coords, bits))
            assert _relu_sum(units, {c: float(b) for c, b in env.items()}, 99) == float(evaluate_expr(e, env)), (t, e)
    wide = ("or", tuple(("c", c) for c in range(MAX_FFN_INPUTS + 1)))
    with pytest.raises(LimitExceeded) as exc:
        dnf_units([(50, wide)])
    assert exc.value.limit == "max_ffn_inputs"


def _words(alphabet_size: int, n: int) -> np.ndarray:
    return np.array(list(itertools.product(range(alphabet_size), repeat=n)), dtype=np.int64).reshape(alphabet_size ** n, n)


@pytest.mark.parametrize("formula,options", [
    ("P(b & Y a)", {}),
    ("MOD(2,1) & !P(MOD(2,0) & !a | MOD(2,1) & !b)", {}),
    ("Y^2 a & MOD(3,0) | P(Y b)", {}),
    ("(a <-> P b) -> Y^3 (a | !P a)", {"y_mode": "recency"}),
    ("MOD(3,0) & Y a", {"y_mode": "recency", "dtype": "float64"}),
])
def test_plan_then_assembly_simulates_every_node_on_all_words_up_to_8(formula, options):
    """plan → assembly → every planned node's literal equals the formula semantics (truth_table) at
    every position, BOS included, of every word over {a, b} of length ≤ 8; the plan's sizes are the
    model's."""
    import torch

    from langclass.models.construct import FormulaTransformer
    from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL

    plan = plan_formula(formula, ["a", "b"], ConstructionOptions(**options))
    model = FormulaTransformer.from_plan(plan)
    desc, summary = model.describe(), plan.summary()
    assert {k: desc[k] for k in ("d_model", "layers", "heads", "heads_by_kind", "ffn_units")} == \
        {k: summary[k] for k in ("d_model", "layers", "heads", "heads_by_kind", "ffn_units")}
    for n in range(9):
        w = _words(2, n)
        ids = torch.cat([torch.full((len(w), 1), BOS), torch.as_tensor(w) + NUM_SPECIAL, torch.full((len(w), 1), EOS)], 1)
        with torch.no_grad():
            hidden = model(ids)
            values = model.literal_values(hidden)
            logits = model.readout(hidden[:, n + 1])[:, 0].double().numpy()
        for node, got in values.items():
            want = truth_table(node, ["a", "b"], w)[node]
            assert np.array_equal(got.numpy(), want.astype(np.float64)), (node.text(), n)
        assert np.array_equal(logits > 0, truth_table(plan.formula, ["a", "b"], w)[plan.formula][:, n + 1])


MARKS = "marks 3\nX := MOD_0 & Q_a\nY := >j [j < i, X(j)] 1 : 0\nZ := <j [j > i, Y(j) & !MOD_2(j)] 1 : 0\noutput Z"


@pytest.mark.parametrize("source", ["dyck", "marks", "P(a S (b & Y a))", "!(a S b) & P b"])
def test_brasp_plan_then_assembly_runs_the_program_on_all_words_up_to_8(source):
    """A program of attention depth K plans to K + 1 layers with one head per attention operation, and
    the assembled model's every vector (position marks included) equals the program run on every word
    of length 1 … 8; a B-RASP[MOD] program plans the mod_onehot encoding of its modulus, others none."""
    import torch

    from langclass.models.construct import BraspTransformer

    prog = (parse_program(DYCK_1_DEPTH_2, ["a", "b"]) if source == "dyck" else parse_program(MARKS, ["a", "b"])
            if source == "marks" else formula_to_brasp(source, ["a", "b"]))
    plan = plan_brasp(prog)
    if source == "marks":
        assert plan.encoding is not None and plan.encoding.family == "mod_onehot"
        assert plan.encoding.kwargs() == {"d_model": plan.d_model, "period": 3, "position_origin": 1}
        assert dict(plan.c_mark) == {"MOD_0": 0, "MOD_1": 1, "MOD_2": 2}
    else:
        assert plan.encoding is None and not plan.c_mark
    attention_ops = [op for op in prog.ops if type(op).__name__ == "AttentionOp"]
    assert len(plan.layers) == plan.K + 1 and plan.summary()["heads"] == len(attention_ops)
    assert plan.K == max(prog.depths()[op.name] for op in attention_ops)
    model = BraspTransformer.from_plan(plan)
    assert model.describe()["ffn_units"] == plan.summary()["ffn_units"]
    for n in range(1, 9):
        w = _words(2, n)
        with torch.no_grad():
            got = model.vector_values(model(torch.as_tensor(w)))
        want = run_program(prog, w)
        for name, v in want.items():
            assert np.array_equal(got[name].numpy(), v.astype(np.float64)), (name, n)


def test_sparse_feed_forward_equals_the_dense_writer_bit_for_bit():
    """The two evaluations of one plan's units (assembly.write_feed_forward, assembly.SparseFeedForward)
    agree exactly on 0/1 streams, in float32 and float64, and add_to adds the same update in place."""
    import torch

    from langclass.models.construct.assembly import SparseFeedForward, write_feed_forward

    rng = np.random.default_rng(3)
    D = 24
    units: list[ReluUnit] = []
    for out in range(16, 24):
        coords = sorted(rng.choice(16, size=int(rng.integers(1, 6)), replace=False).tolist())
        units += dnf_units([(out, _random_expr(rng, coords, 3))])[0]
    units += gate_units(Gate("iff", (Literal(3, True), Literal(5)), 20), 0)
    x = torch.as_tensor(rng.integers(0, 2, size=(3, 7, D)), dtype=torch.float64)
    for dtype in (torch.float64, torch.float32):
        dense_ffn = write_feed_forward(units, D).to(dtype)
        sparse = SparseFeedForward(units).to(dtype)
        xd = x.to(dtype)
        with torch.no_grad():
            want = dense_ffn(xd)
            assert torch.equal(sparse(xd), want) and want.abs().sum() > 0
            y = xd.clone()
            sparse.add_to(y)
            assert torch.equal(y, xd + want)
