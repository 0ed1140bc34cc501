"""The LTL[P,MOD] non-member reason says what its certificate shows, and the certificate replays."""

from __future__ import annotations

from langclass.core.classification.analysis import analyze
from langclass.core.algebra.classes.ordered import qr_witness_words
from langclass.core.ingest.parse import parse_regex


def test_reason_names_the_words_and_the_padding_that_makes_them_work_for_every_k() -> None:
    """(Before: "mutually reachable by words of length ≡ 0 mod every k", naming bb / aa, which have
    length 2 and so work only for k dividing 2.)"""
    dfa = parse_regex("(ab|ba)*", ["a", "b"])
    res = analyze(dfa).classes["ltl_p_mod"]
    assert res.member is False
    wit = res.witness.to_dict() if hasattr(res.witness, "to_dict") else res.witness
    assert "mod every k" not in res.reason
    assert f"u = {''.join(wit['u'])} leads" in res.reason and f"loops at {wit['p']}" in res.reason
    assert f"period {wit['period']}" in res.reason
    for k in range(1, 8):  # the padded words the reason promises exist for every k, and replay
        u, v = qr_witness_words(wit, k)
        assert len(u) % k == 0 and len(v) % k == 0
        assert dfa.run(u, wit["p"]) == wit["q"] and dfa.run(v, wit["q"]) == wit["p"]
