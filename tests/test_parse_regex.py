"""Regex ingest: state counts, identity, property tests against independent oracles, errors, limits,
and the automata-lib 9.2.0 traps (each kind shown absent here)."""

from __future__ import annotations

import gc
import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import (
    AlphabetError,
    InputError,
    LimitExceeded,
    RegexSyntaxError,
    TimeLimitExceeded,
    UnknownSymbolError,
)
from langclass.core.base.limits import Deadline, Limits
from langclass.core.ingest.parse import parse_dfa_json, parse_regex
from langclass.core.ingest.regex import Node, parse_regex_ast, render

from _lang_oracles import all_words, has_boolean_ops, set_semantics, to_python_re

ROOT = Path(__file__).resolve().parents[1]


def accepted_set(dfa: DFA, max_len: int) -> set[tuple[int, ...]]:
    """Words (as letter-index tuples) of length ≤ max_len accepted by ``dfa``, by running the table."""
    t = dfa.transitions
    out = set()
    for w in all_words(dfa.num_letters, max_len):
        q = dfa.initial
        for a in w:
            q = t[q, a]
        if dfa.accepting[q]:
            out.add(w)
    return out


# ----------------------------------------------------------------------- "Done when" counts


@pytest.mark.parametrize(
    "regex, alphabet, states",
    [
        ("(ab)*", "ab", 3),
        ("(aa)*", "a", 2),
        ("(aa)*", "ab", 3),
        ("a(a|b)*", "ab", 3),
        ("(a|b)*a", "ab", 2),
        ("(a|b|c)*ab(a|b|c)*", "abc", 3),
        ("a", "a", 3),  # initial, accepting, sink: the sink counts (complete DFA)
        ("∅", "ab", 1),
        ("ε", "ab", 2),
        (".*", "ab", 1),
    ],
)
def test_minimal_complete_state_counts(regex: str, alphabet: str, states: int) -> None:
    assert parse_regex(regex, list(alphabet)).num_states == states


def tomita_predicates():
    def runs(w: str) -> list[tuple[str, int]]:
        return [(c, len(list(g))) for c, g in itertools.groupby(w)]

    def t3(w: str) -> bool:  # no odd run of 1s immediately followed by an odd run of 0s
        r = runs(w)
        return not any(c == "1" and n % 2 and d == "0" and m % 2 for (c, n), (d, m) in zip(r, r[1:]))

    return {
        1: lambda w: "0" not in w,
        2: lambda w: re.fullmatch("(10)*", w) is not None,
        3: t3,
        4: lambda w: "000" not in w,
        5: lambda w: w.count("0") % 2 == 0 and w.count("1") % 2 == 0,
        6: lambda w: (w.count("0") - w.count("1")) % 3 == 0,
        7: lambda w: re.fullmatch("0*1*0*1*", w) is not None,
    }


TOMITA_REGEX = {
    1: "1*",
    2: "(10)*",
    3: "~( ((0|1)*0)? (11)*1 0(00)* (1(0|1)*)? )",
    4: "~( (0|1)* 000 (0|1)* )",
    5: "(1*01*0)*1* & (0*10*1)*0*",
    7: "0*1*0*1*",
}
# Tomita 6 ((#0 − #1) ≡ 0 mod 3) as a DFA: state = (#0 − #1) mod 3
TOMITA6_DFA = {
    "alphabet": ["0", "1"],
    "states": ["d0", "d1", "d2"],
    "initial": "d0",
    "accepting": ["d0"],
    "transitions": {"d0": {"0": "d1", "1": "d2"}, "d1": {"0": "d2", "1": "d0"}, "d2": {"0": "d0", "1": "d1"}},
}
TOMITA_STATES = {1: 2, 2: 3, 3: 5, 4: 4, 5: 4, 6: 3, 7: 5}


@pytest.mark.parametrize("i", range(1, 8))
def test_tomita_grammars(i: int) -> None:
    dfa = parse_dfa_json(TOMITA6_DFA) if i == 6 else parse_regex(TOMITA_REGEX[i], ["0", "1"])
    assert dfa.num_states == TOMITA_STATES[i]
    pred = tomita_predicates()[i]
    for n in range(11):
        for w in itertools.product("01", repeat=n):
            assert dfa.accepts(w) == pred("".join(w)), ("tomita", i, "".join(w))


GROUND_TRUTH = json.loads((ROOT / "tests" / "ground_truth.json").read_text())["languages"]


@pytest.mark.parametrize("lang", GROUND_TRUTH, ids=[lang["id"] for lang in GROUND_TRUTH])
def test_ground_truth_regex_and_dfa_agree(lang: dict) -> None:
    from_regex = parse_regex(lang["regex"], lang["alphabet"])
    from_dfa = parse_dfa_json({**lang["dfa"], "alphabet": lang["alphabet"]})
    assert from_regex.fingerprint() == from_dfa.fingerprint()
    assert from_regex == from_dfa  # canonical numbering makes them structurally equal
    assert from_regex.num_states == lang["extra"]["min_dfa_states"] == len(lang["dfa"]["states"])


# ----------------------------------------------------------------------------- identity


def test_same_language_same_fingerprint() -> None:
    assert parse_regex("(a|b)*", ["a", "b"]).fingerprint() == parse_regex("(a*b*)*", ["a", "b"]).fingerprint()
    assert parse_regex("(a|b)*", ["a", "b"]).fingerprint() == parse_regex(".*", ["a", "b"]).fingerprint()
    assert parse_regex("a+", ["a"]).fingerprint() == parse_regex("aa*", ["a"]).fingerprint()


def test_alphabet_is_part_of_identity() -> None:
    assert parse_regex("a*", ["a"]).fingerprint() != parse_regex("a*", ["a", "b"]).fingerprint()
    # alphabet order is part of the identity too (canonical numbering follows it)
    assert parse_regex("a*", ["a", "b"]).fingerprint() != parse_regex("a*", ["b", "a"]).fingerprint()


def test_fingerprint_is_independent_of_python_hash_seed() -> None:
    regexes = ["(a|b)*a(a|b)", "(ab|ba)*&~(.*aa.*)", "((a|b)(a|b))*"]
    code = (
        "import json,sys;from langclass.core.ingest.parse import parse_regex;"
        f"print(json.dumps([parse_regex(r,['a','b']).fingerprint() for r in {regexes!r}]))"
    )
    here = [parse_regex(r, ["a", "b"]).fingerprint() for r in regexes]
    for seed in ("0", "4242"):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env={"PYTHONHASHSEED": seed, "PATH": ""}
        )
        assert json.loads(out.stdout) == here


# ------------------------------------------------------------------- property-based tests

ALPHA = ["a", "b"]
MAX_LEN = 8


def _leaf() -> st.SearchStrategy[Node]:
    return st.one_of(
        st.sampled_from([0, 1]).map(lambda i: Node("sym", (), i)),
        st.just(Node("any")),
        st.just(Node("eps")),
        st.just(Node("empty")),
    )


def _extend(children: st.SearchStrategy[Node], boolean: bool) -> st.SearchStrategy[Node]:
    nary = ["union", "concat"] + (["inter"] if boolean else [])
    unary = ["star", "plus", "opt"] + ["compl"] * boolean
    reps = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).map(
        lambda p: (p[0], None if p[1] is None else p[0] + p[1])
    )
    return st.one_of(
        st.tuples(st.sampled_from(nary), st.lists(children, min_size=2, max_size=3)).map(lambda t: Node(t[0], tuple(t[1]))),
        st.tuples(st.sampled_from(unary), children).map(lambda t: Node(t[0], (t[1],))),
        st.tuples(children, reps).map(lambda t: Node("repeat", (t[0],), t[1])),
    )


regex_asts = st.recursive(_leaf(), lambda c: _extend(c, True), max_leaves=8)
plain_regex_asts = st.recursive(_leaf(), lambda c: _extend(c, False), max_leaves=8)


def _strip_positions(node: Node) -> Node:
    return Node(node.op, tuple(_strip_positions(c) for c in node.children), node.value)


def _spaced(text: str, data: st.DataObject) -> str:
    """Insert random whitespace between characters (never inside an escape)."""
    out = []
    for ch in text:
        out.append(ch)
        if data.draw(st.booleans()):
            out.append(data.draw(st.sampled_from([" ", "\t", "\n", "  "])))
    return "".join(out)


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node=regex_asts, data=st.data())
def test_minimal_dfa_agrees_with_set_semantics(node: Node, data: st.DataObject) -> None:
    text = _spaced(render(node, ALPHA), data)
    assert _strip_positions(parse_regex_ast(text, ALPHA)) == node  # the parser reads back the AST
    dfa = parse_regex(text, ALPHA)
    assert accepted_set(dfa, MAX_LEN) == set_semantics(node, 2, MAX_LEN)
    assert dfa.canonical() is dfa or dfa.canonical() == dfa


@settings(max_examples=50, deadline=None)
@given(node=plain_regex_asts)
def test_minimal_dfa_agrees_with_python_re(node: Node) -> None:
    dfa = parse_regex(render(node, ALPHA), ALPHA)
    pattern = re.compile(to_python_re(node, ALPHA))
    for w in all_words(2, MAX_LEN):
        s = "".join(ALPHA[a] for a in w)
        assert dfa.accepts(s) == (pattern.fullmatch(s) is not None), s


@settings(max_examples=40, deadline=None)
@given(x=regex_asts, y=regex_asts)
def test_complement_and_intersection_agree_with_set_semantics(x: Node, y: Node) -> None:
    dx, dy = parse_regex(render(x, ALPHA), ALPHA), parse_regex(render(y, ALPHA), ALPHA)
    sx, sy = set_semantics(x, 2, MAX_LEN), set_semantics(y, 2, MAX_LEN)
    universe = set(all_words(2, MAX_LEN))
    inter = dx.intersection(dy).canonical()
    compl = dx.complement().canonical()
    assert accepted_set(inter, MAX_LEN) == sx & sy
    assert accepted_set(compl, MAX_LEN) == universe - sx
    assert accepted_set(dx.union(dy), MAX_LEN) == sx | sy
    # the regex operators & and ~ give the same languages as the DFA operations
    rx, ry = render(x, ALPHA), render(y, ALPHA)
    assert parse_regex(f"({rx})&({ry})", ALPHA).fingerprint() == inter.fingerprint()
    assert parse_regex(f"~({rx})", ALPHA).fingerprint() == compl.fingerprint()
    # counterexample is a word of the symmetric difference, and None iff equivalent
    cx = dx.counterexample(dy)
    assert (cx is None) == (dx.fingerprint() == dy.fingerprint())
    if cx is not None:
        assert dx.accepts(cx) != dy.accepts(cx)


# ------------------------------------------------------------------- syntax details


def test_operator_precedence_and_stacking() -> None:
    ab = ["a", "b"]

    def same(x: str, y: str) -> bool:
        return parse_regex(x, ab).fingerprint() == parse_regex(y, ab).fingerprint()

    assert same("ab*", "a(b*)")
    assert same("a|b&a", "a|(b&a)")
    assert same("~ab", "(~a)b")
    assert same("~a*", "~(a*)")
    assert same("a*?", "a*")  # postfix operators stack: (a*)? — no lazy quantifiers
    assert same("a{2}{3}", "a{6}")
    assert same("a{1,}", "a+")
    assert same("a{0,}", "a*")
    assert same("a{0,1}", "a?")
    assert same("~~(ab)", "ab")
    assert same("a()b", "ab")
    assert same("aεb", "ab")
    assert same("a∅|b", "b")


def test_escapes_and_reserved_symbols() -> None:
    d = parse_regex(r"\(\*|\ ", ["(", "*", " "])
    assert d.accepts(["(", "*"]) and d.accepts([" "]) and not d.accepts(["("])
    d = parse_regex(r"\ε", ["ε"])  # the letter ε, not the empty word
    assert d.accepts(["ε"]) and not d.accepts([])
    d = parse_regex("ε", ["ε"])  # plain ε is always the empty word
    assert d.accepts([]) and not d.accepts(["ε"])


def test_unicode_symbols_are_nfc_normalized() -> None:
    decomposed = "e\u0301"  # e + combining acute = é
    d = parse_regex(decomposed + "*", ["\u00e9", "x"])
    assert d.alphabet == ("\u00e9", "x")
    assert d.accepts(["\u00e9", "\u00e9"]) and d.accepts([decomposed])
    assert parse_regex("é*", [decomposed, "x"]).fingerprint() == d.fingerprint()


# --------------------------------------------------------------- automata-lib 9.2.0 traps


def test_trap_repeat_zero_is_the_empty_word() -> None:
    for r in ("a{0}", "(a|b){0}", "b{0,0}", "(ab){0}a{0}"):
        d = parse_regex(r, ["a", "b"])
        assert d.accepts([]) and not d.accepts(["a"]) and not d.accepts(["b"]) and d.num_states == 2
    assert parse_regex("a{0}b", ["a", "b"]).fingerprint() == parse_regex("b", ["a", "b"]).fingerprint()


@pytest.mark.parametrize("regex", [r"\d", r"\w", r"\s", "[a-c]", "[ab]", "a]", "^a", "a$", "^", "$"])
def test_trap_no_character_classes_anchors_or_inference(regex: str) -> None:
    with pytest.raises(RegexSyntaxError) as err:
        parse_regex(regex, ["a", "b"])
    assert isinstance(err.value.extra["position"], int)


def test_trap_no_alphabet_inference() -> None:
    with pytest.raises(UnknownSymbolError) as err:
        parse_regex("a|c", ["a", "b"])
    assert err.value.extra["symbol"] == "c" and err.value.extra["position"] == 2
    with pytest.raises(UnknownSymbolError):
        parse_regex("0*1", ["0"])
    with pytest.raises(AlphabetError):
        parse_regex("a", [])
    d = parse_regex("a*", ["a", "b"])
    assert d.alphabet == ("a", "b")  # exactly the declared alphabet, nothing added


def test_trap_epsilon_is_the_empty_word() -> None:
    for r in ("ε", "ϵ", "()", "ε*", "(ε)"):
        d = parse_regex(r, ["a"])
        assert d.accepts([]) and not d.accepts(["a"])
    assert parse_regex("aε", ["a"]).fingerprint() == parse_regex("a", ["a"]).fingerprint()


def test_trap_whitespace_is_ignored() -> None:
    base = parse_regex("(a|b)*ab{1,2}", ["a", "b"]).fingerprint()
    for r in (" ( a | b ) * a b { 1 , 2 } ", "\t(a|b)*\n ab{1,2}\r\n", "(a|b)*ab{ 1,2 }"):
        assert parse_regex(r, ["a", "b"]).fingerprint() == base


def test_trap_different_alphabets_raise_when_compared() -> None:
    x, y = parse_regex("a*", ["a"]), parse_regex("a*", ["a", "b"])
    with pytest.raises(AlphabetError):
        x.equivalent(y)
    with pytest.raises(AlphabetError):
        x.intersection(y)
    with pytest.raises(AlphabetError):
        x.counterexample(y)


def test_trap_intermediate_results_stay_usable() -> None:
    # results are plain immutable values: operations on unnamed temporaries never fail
    assert parse_regex("a*", ["a", "b"]).intersection(parse_regex(".*b", ["a", "b"])).is_empty()
    gc.collect()
    tmp = parse_regex("(ab)*", ["a", "b"]).complement().complement().canonical()
    gc.collect()
    assert not tmp.is_empty() and tmp.fingerprint() == parse_regex("(ab)*", ["a", "b"]).fingerprint()


def test_trap_complete_dfa_counts_the_sink() -> None:
    d = parse_regex("a(a|b)*", ["a", "b"])
    assert d.num_states == 3
    sinks = [q for q in range(3) if not d.accepting[q] and (d.transitions[q] == q).all()]
    assert len(sinks) == 1
    assert (d.transitions >= 0).all() and d.transitions.shape == (3, 2)


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "regex, position, needle",
    [
        ("", 0, "empty"),
        ("   ", 0, "empty"),
        ("(a", 2, "missing ')'"),
        ("a)", 1, "unbalanced"),
        ("*a", 0, "nothing to repeat"),
        ("a|*", 2, "nothing to repeat"),
        ("+", 0, "nothing to repeat"),
        ("{2}", 0, "nothing to repeat"),
        ("a|", 2, "right operand"),
        ("|a", 0, "left operand"),
        ("a||b", 2, "left operand"),
        ("(|a)", 1, "left operand"),
        ("a&", 2, "right operand"),
        ("a~", 2, "right operand"),
        ("a{2", 3, "not closed"),
        ("a{3,2}", 2, "n > m"),
        ("a{,2}", 2, "bounded repetition"),
        ("a{x}", 2, "bounded repetition"),
        ("a{2,3,4}", 5, "bounded repetition"),
        ("a\\", 1, "escapes nothing"),
        ("a\\b", 1, "unsupported escape"),
        ("[ab]", 0, "character classes"),
        ("a^", 1, "anchor"),
    ],
)
def test_syntax_errors_name_problem_and_position(regex: str, position: int, needle: str) -> None:
    with pytest.raises(RegexSyntaxError) as err:
        parse_regex(regex, ["a", "b"])
    assert err.value.extra["position"] == position, err.value.detail
    assert needle in err.value.detail
    assert err.value.to_dict()["code"] == "regex-syntax" and err.value.field == "regex"


def test_bad_argument_types_are_input_errors() -> None:
    with pytest.raises(RegexSyntaxError):
        parse_regex(None, ["a"])  # type: ignore[arg-type]
    with pytest.raises(AlphabetError):
        parse_regex("a", "ab")  # a string is not a list of symbols
    with pytest.raises(AlphabetError) as err:
        parse_regex("a", ["a", "a"])
    assert err.value.field == "alphabet[1]"
    with pytest.raises(AlphabetError):
        parse_regex("a", ["a", ""])


def test_multicharacter_symbol_in_regex_alphabet_is_a_clear_error() -> None:
    with pytest.raises(AlphabetError) as err:
        parse_regex("a", ["a", "bc"])
    assert "single characters" in err.value.detail and err.value.field == "alphabet[1]"


# ------------------------------------------------------------------------ limits


def test_limit_regex_length() -> None:
    with pytest.raises(LimitExceeded) as err:
        parse_regex("a" * 101, ["a"], Limits(max_regex_length=100))
    assert err.value.limit == "max_regex_length" and err.value.value == 100
    assert parse_regex("a" * 100, ["a"], Limits(max_regex_length=100)).num_states == 102


def test_limit_nesting_depth() -> None:
    lim = Limits(max_nesting_depth=10)
    with pytest.raises(LimitExceeded) as err:
        parse_regex("(" * 11 + "a" + ")" * 11, ["a"], lim)
    assert err.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded) as err:
        parse_regex("~" * 12 + "a", ["a"], lim)
    assert err.value.limit == "max_nesting_depth"
    with pytest.raises(LimitExceeded):
        parse_regex("a" + "*" * 12, ["a"], lim)
    # long flat regexes are not deep
    assert parse_regex("|".join(["a"] * 500), ["a"], lim).num_states == 3
    # deep but allowed nesting does not hit Python's recursion limit
    deep = Limits(max_nesting_depth=5000, max_regex_length=20000)
    assert parse_regex("(" * 3000 + "a" + ")*" * 3000, ["a"], deep).num_states == 1
    assert parse_regex("~" * 3001 + "a", ["a"], deep).num_states == 3


def test_limit_repetition() -> None:
    with pytest.raises(LimitExceeded) as err:
        parse_regex("a{1001}", ["a"])
    assert err.value.limit == "max_repetition" and err.value.value == 1000 and err.value.extra["position"] == 2
    with pytest.raises(LimitExceeded):
        parse_regex("a{2,99999999999999999999999999999999999999}", ["a"])
    assert parse_regex("a{1000}", ["a"]).num_states == 1002


def test_limit_states_after_determinization() -> None:
    lim = Limits(max_states=1000)
    assert parse_regex("(a|b)*a(a|b){8}", ["a", "b"], lim).num_states == 512
    with pytest.raises(LimitExceeded) as err:
        parse_regex("(a|b)*a(a|b){10}", ["a", "b"], lim)
    assert err.value.limit == "max_states" and err.value.value == 1000
    # nested bounded repetitions blow up the NFA before any determinization
    with pytest.raises(LimitExceeded) as err:
        parse_regex("((a{1000}){1000}){1000}", ["a"])
    assert err.value.limit == "max_states"
    # products of & are bounded too
    with pytest.raises(LimitExceeded):
        parse_regex("(.*a.{5}) & (.*b.{5})", ["a", "b"], Limits(max_states=100))


def test_default_state_limit_is_100k() -> None:
    assert Limits().max_states == 100_000


def test_time_limit() -> None:
    dl = Deadline(0.0)
    time.sleep(0.002)
    with pytest.raises(TimeLimitExceeded) as err:
        parse_regex("(a|b)*a(a|b){3}", ["a", "b"], deadline=dl)
    assert err.value.limit == "time_limit_s"
    with pytest.raises(TimeLimitExceeded):
        parse_regex("a", ["a"], Limits(time_limit_s=-1.0))


@pytest.mark.parametrize("regex", ["((a*)*)*", "(ε*)*", "(∅*)*", "((a|ε)*|(ε|b)*)*", "(~(a*))*", "((a?)+)*"])
def test_nested_stars_terminate(regex: str) -> None:
    d = parse_regex(regex, ["a", "b"])
    assert d.accepts([])


def test_every_error_is_typed() -> None:
    bad = ["(", ")", "a{", "}", "a{}", "a{-1}", ",", "a,b", "ab\\", "~", "&", "|", "**", "a{1}{", "\\x", "a[", "((", "))(("]
    for r in bad:
        with pytest.raises((InputError, LimitExceeded)):
            parse_regex(r, ["a", "b"])


def test_comma_is_reserved_outside_braces_too() -> None:
    with pytest.raises(RegexSyntaxError):
        parse_regex("a,b", ["a", "b", ","])
    assert parse_regex(r"a\,b", ["a", "b", ","]).accepts(["a", ",", "b"])


def test_dfa_json_of_regex_roundtrip() -> None:
    from langclass.core.automata.export import dfa_to_json

    for r in ["(a|b)*a(a|b)", "(ab|ba)*", "∅", "ε", "a{2,4}b?"]:
        d = parse_regex(r, ["a", "b"])
        again = parse_dfa_json(json.dumps(dfa_to_json(d)))
        assert again.fingerprint() == d.fingerprint() and again == d


def test_accepts_numpy_words_and_strings() -> None:
    d = parse_regex("(ab)*", ["a", "b"])
    assert d.accepts("abab") and d.accepts(("a", "b")) and not d.accepts(np.array(["a"]).tolist())
    with pytest.raises(UnknownSymbolError):
        d.accepts("abc")


@pytest.mark.parametrize("text", ["a,b", ",a", "(a|b),b"])
def test_unescaped_comma_outside_braces_says_escape_it(text):
    with pytest.raises(Exception) as info:
        parse_regex_ast(text, ["a", "b"])
    msg = str(info.value)
    assert "\\," in msg and "bounded repetition" not in msg


def test_malformed_braces_still_say_bounded_repetition():
    with pytest.raises(Exception) as info:
        parse_regex_ast("a{,2}", ["a", "b"])
    assert "malformed bounded repetition" in str(info.value)
