"""Every encoding the service names exists (issue 13 item 5): each catalogue entry and each answer
(primary and alternatives) for the ground-truth languages builds through ``make_encoding``; the
FO[<,MOD] hard answer is a finite-image encoding (marks i mod m) with the least working modulus m."""

from __future__ import annotations

import pytest
import torch

from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.precision.encoding_choice import encoding_catalogue
from langclass.core.synthesis.fo_mod import least_modulus
from langclass.models.nn.encodings import make_encoding

from _ground_truth import LANGUAGES as GT

CONTEXT = {"d_model": 16, "d_head": 8, "n_heads": 2}


def build(spec: dict):
    """The encoding of a build spec; a composite (``parts``) gives a tuple of its parts' encodings."""
    if "parts" in spec:
        parts = tuple(build(p) for p in spec["parts"])
        assert "+".join(p.family for p in parts) == spec["name"]
        return _Composite(spec["name"], parts)
    params = {k: v for k, v in spec.items() if k != "name"}
    context = {k: v for k, v in CONTEXT.items() if k not in params}
    return make_encoding(spec["name"], **context, **params)


class _Composite:
    def __init__(self, family: str, parts: tuple) -> None:
        self.family, self.parts = family, parts


@pytest.mark.parametrize("entry", encoding_catalogue(), ids=lambda e: f"{e['encoding']}-{e['attention']}-{e['class']}")
def test_every_catalogue_entry_builds(entry):
    enc = build(entry["build"])
    assert enc.family == entry["encoding"] == entry["build"]["name"]


def test_the_ltl_p_y_mod_answer_builds_periodic_rope_and_recency_heads():
    from langclass.core.ingest.parse import parse_regex

    soft = analyze(parse_regex("((a|b)(a|b))*(a|b)a", ["a", "b"])).encodings["soft"]
    assert soft["name"] == "periodic RoPE with period 2 + recency heads, all lengths"
    assert soft["class"] == "ltl_p_y_mod" and soft["length_guarantee"] == "all lengths" and "docs/recency.md" in soft["theorem"]
    rope, alibi = build(soft["build"]).parts
    assert rope.family == "rope_periodic" and rope.periods == (2,) * len(rope.periods)
    assert alibi.family == "alibi" and max(alibi.slopes) >= 103.97  # ≥ f_large(float32)
    alt = soft["alternatives"][0]
    assert alt["encoding"] == "rope_periodic+rope" and "length-bounded" in alt["name"]
    assert [p.family for p in build(alt["build"]).parts] == ["rope_periodic", "rope"]


def test_a_quasi_aperiodic_language_outside_ltl_p_y_mod_says_why():
    from langclass.core.algebra.classes import replay
    from langclass.core.ingest.parse import parse_regex

    dfa = parse_regex("(a|b|c)*ac*", list("abc"))
    a = analyze(dfa)
    soft, hard = a.encodings["soft"], a.encodings["hard"]
    assert soft["encoding"] is None and soft["name"] == "none known"
    assert "outside LTL[P,Y,MOD]" in soft["reason"] and a.classes["ltl_p_y_mod"].reason in soft["reason"]
    assert soft["outside"]["witness"] == a.classes["ltl_p_y_mod"].witness.to_dict()
    replay(dfa, {"key": "ltl_p_y_mod", "member": False, "witness": soft["outside"]["witness"]})
    assert hard["encoding"] == "nope" and hard["class"] == "star_free"  # the hard answer as before


def gt_dfa(entry) -> DFA:
    d = entry["dfa"]
    idx = {s: i for i, s in enumerate(d["states"])}
    table = [[idx[d["transitions"][s][a]] for a in entry["alphabet"]] for s in d["states"]]
    return DFA.from_table(entry["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]])


@pytest.mark.parametrize("entry", GT, ids=lambda e: e["id"])
def test_every_answer_builds(entry):
    a = analyze(gt_dfa(entry))
    for family in ("soft", "hard"):
        ans = a.encodings[family]
        for option in [ans, *ans["alternatives"]]:
            if option["encoding"] is None:
                assert option["build"] is None
                continue
            enc = build(option["build"])
            assert enc.family == option["encoding"]
    hard = a.encodings["hard"]
    if hard["class"] == "fo_mod":  # finite image: i mod m with the least working modulus m
        m = hard["parameters"]["modulus"]
        assert m == least_modulus(gt_dfa(entry)).modulus <= hard["parameters"]["stability_index"]
        enc = build(hard["build"])
        assert hard["encoding"] == "mod_onehot" and enc.period == m
        x = torch.zeros(1, 3 * m + 1, CONTEXT["d_model"])
        pe = enc.embed(x, enc.position_ids(3 * m + 1))[0]
        assert torch.equal(pe[:m], pe[m:2 * m]) and len({tuple(r.tolist()) for r in pe}) == m
        alt = build(hard["alternatives"][0]["build"])  # the rational sinusoidal PE of Cor 20, same period
        assert alt.family == "sinusoidal_periodic" and alt.periods == (m,) * len(alt.periods)
