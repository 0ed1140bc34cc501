"""One enum of encoding families for core and models (issue 12): the model registry holds exactly the
members of ``EncodingFamily`` and refuses anything else; every encoding that core names (catalogue,
answers for the ground-truth languages) and every encoding a construction uses is a member and
builds through ``make_encoding``."""

from __future__ import annotations

import pytest

from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.precision.encoding_choice import encoding_catalogue
from langclass.core.precision.encoding_families import EncodingFamily, families_of
from langclass.core.base.errors import InputError
from langclass.models.construct.plan import ConstructionOptions, plan_formula
from langclass.models.nn.encoding_base import PositionalEncoding, register_family
from langclass.models.nn.encodings import ENCODING_FAMILIES, make_encoding

from _ground_truth import LANGUAGES as GT

CONTEXT = {"d_model": 16, "d_head": 8, "n_heads": 2}


def gt_dfa(entry) -> DFA:
    d = entry["dfa"]
    idx = {s: i for i, s in enumerate(d["states"])}
    table = [[idx[d["transitions"][s][a]] for a in entry["alphabet"]] for s in d["states"]]
    return DFA.from_table(entry["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]])


def test_the_registry_is_the_enum():
    assert sorted(ENCODING_FAMILIES) == sorted(f.value for f in EncodingFamily)
    for name, cls in ENCODING_FAMILIES.items():
        assert type(name) is str and cls.family == name
    for family in EncodingFamily:  # a member builds like its value
        assert make_encoding(family, **CONTEXT).digest() == make_encoding(family.value, **CONTEXT).digest()


def test_the_registry_refuses_a_family_outside_the_enum():
    class Stray(PositionalEncoding):
        family = "stray"

    before = dict(ENCODING_FAMILIES)
    with pytest.raises(ValueError, match="not an EncodingFamily"):
        register_family(Stray, ())
    assert ENCODING_FAMILIES == before
    with pytest.raises(InputError):
        make_encoding("stray")


def test_composite_names():
    assert families_of("rope_periodic+alibi") == (EncodingFamily.ROPE_PERIODIC, EncodingFamily.ALIBI)
    assert families_of("nope") == (EncodingFamily.NOPE,)
    with pytest.raises(InputError, match="'ropee'"):
        families_of("rope_periodic+ropee")


def test_every_name_core_gives_is_a_member():
    names = set()
    for entry in encoding_catalogue():
        names |= {entry["encoding"], entry["build"]["name"]}
    for lang in GT:
        for ans in analyze(gt_dfa(lang)).encodings.values():
            for option in [ans, *ans["alternatives"]]:
                if option["encoding"] is not None:
                    names |= {option["encoding"], option["build"]["name"]}
    assert names and all(type(n) is str for n in names)
    # a composite build (periodic RoPE + recency heads) names each of its families, joined by "+"
    names = {part for n in names for part in n.split("+")}
    assert {EncodingFamily(n) for n in names} >= {EncodingFamily.NOPE, EncodingFamily.ROPE, EncodingFamily.ROPE_PERIODIC,
                                                   EncodingFamily.SINUSOIDAL_PERIODIC, EncodingFamily.ALIBI}


def test_family_lists_elsewhere_are_members():
    from langclass.app.usecases.experiments import PERIODIC_FAMILIES
    from langclass.models.training.train_batched import BATCHABLE_FAMILIES

    for name in (*PERIODIC_FAMILIES, *BATCHABLE_FAMILIES):
        EncodingFamily(name)


@pytest.mark.parametrize("formula,options,name", [
    ("P a", {}, "nope"), ("MOD(2,1) & a", {}, "rope_periodic"), ("Y a", {}, "rope"),
    ("MOD(3,0) & Y a", {}, "rope_periodic+rope"), ("Y a", {"y_mode": "recency"}, "alibi"),
    ("MOD(3,0) & Y a", {"y_mode": "recency"}, "rope_periodic+alibi"),
])
def test_every_construction_encoding_is_a_member_and_builds(formula, options, name):
    plan = plan_formula(formula, ["a", "b"], ConstructionOptions(**options))
    assert plan.encoding_name == name
    assert {spec.family for spec in plan.encodings} == set(families_of(name))
    for spec in plan.encodings:
        enc = make_encoding(spec.family, **spec.kwargs())
        assert enc.family == spec.family.value


def test_the_hard_construction_encoding_is_a_member_and_builds():
    from langclass.core.logic.brasp import parse_program
    from langclass.models.construct import build_brasp_transformer

    prog = parse_program("marks 2\nX := MOD_1 & Q_a\nY := >j [j < i, X(j)] 1 : 0\noutput Y", ["a", "b"])
    model = build_brasp_transformer(prog)
    spec = model.plan.encoding
    assert spec.family is EncodingFamily.MOD_ONEHOT
    desc = model.describe()
    assert desc["encoding"] == spec.family.value and [e["family"] for e in desc["encodings"]] == ["mod_onehot"]
    assert desc["encodings"][0]["digest"] == make_encoding(spec.family, **spec.kwargs()).digest()
    plain = build_brasp_transformer(parse_program("X := Q_a\noutput X", ["a", "b"]))
    assert plain.plan.encoding is None and EncodingFamily(plain.describe()["encoding"]) is EncodingFamily.NOPE
