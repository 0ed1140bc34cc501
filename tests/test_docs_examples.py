"""The examples in docs/formulas.md and docs/brasp.md parse, compile, and mean what the docs say.

Convention (documented in docs/formulas.md, "Examples in this document are tested"):

* A fenced block opened with ```` ```formula ```` holds one formula per line.
* A line ``# alphabet: a b`` (space-separated symbols) sets the alphabet for the formula lines after
  it in the same block; every block must set one before its first formula.
* ``#`` outside a quoted symbol starts a comment. A comment of the form ``# ≡ REGEX`` claims that
  the formula defines the same language as REGEX (docs/regex.md syntax, same alphabet); the test
  checks the claim by comparing canonical DFA fingerprints.
* A fenced block opened with ```` ```brasp ```` is a whole B-RASP program; its ``# alphabet:`` and
  ``# ≡ REGEX`` comment lines are read the same way, and the program must accept exactly the words
  of REGEX up to a fixed length.

Each formula line must parse, compile to a DFA (``formula_to_dfa``), and round-trip through its
rendered text (``Formula.text()`` re-parses to the same AST).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from langclass.core.logic.brasp import accepts_batch, parse_program
from langclass.core.logic.formulas import formula_to_dfa, parse_formula
from langclass.core.ingest.parse import parse_regex

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```(\w+)\s*\n(.*?)^```\s*$", re.S | re.M)


def _blocks(doc: str, lang: str) -> list[tuple[int, str]]:
    """(line number of the opening fence, body) of every ```lang block of docs/<doc>."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        if m.group(1) == lang:
            out.append((text.count("\n", 0, m.start()) + 1, m.group(2)))
    return out


def _split_comment(line: str) -> tuple[str, str | None]:
    """Split ``line`` at the first ``#`` outside a quoted symbol: (code, comment or None)."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:k].strip(), line[k + 1:].strip()
    return line.strip(), None


def _formula_examples() -> list[tuple[str, tuple[str, ...], str, str | None]]:
    """(where, alphabet, formula, claimed regex or None) for every formula line of docs/formulas.md."""
    examples = []
    for start, body in _blocks("formulas.md", "formula"):
        alphabet: tuple[str, ...] | None = None
        for offset, line in enumerate(body.splitlines(), start=1):
            code, comment = _split_comment(line)
            where = f"docs/formulas.md:{start + offset}"
            if not code:
                if comment and comment.startswith("alphabet:"):
                    alphabet = tuple(comment[len("alphabet:"):].split())
                continue
            assert alphabet, f"{where}: a ```formula block must start with '# alphabet: …'"
            regex = comment[1:].strip() if comment and comment.startswith("≡") else None
            examples.append((where, alphabet, code, regex))
    return examples


EXAMPLES = _formula_examples()


def test_docs_have_formula_examples():
    """The extraction itself works: the docs hold many examples, most with a language claim."""
    assert len(EXAMPLES) >= 30
    assert sum(r is not None for *_, r in EXAMPLES) >= 25


@pytest.mark.parametrize("where,alphabet,text,regex", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_formula_example(where, alphabet, text, regex):
    f = parse_formula(text, alphabet)
    assert parse_formula(f.text(), alphabet) == f, f"{where}: rendered text {f.text()!r} does not round-trip"
    dfa = formula_to_dfa(f, alphabet)
    assert dfa.num_states >= 1
    if regex is not None:
        ref = parse_regex(regex, alphabet)
        assert dfa.fingerprint() == ref.fingerprint(), (
            f"{where}: {text!r} is not {regex!r} over {alphabet}; counterexample {dfa.counterexample(ref)}")


def test_extraction_rejects_a_wrong_claim():
    """The checker above can fail: a deliberately wrong claim is caught with a counterexample."""
    dfa = formula_to_dfa("Y a", ("a", "b"))
    ref = parse_regex("a.*", ("a", "b"))
    assert dfa.fingerprint() != ref.fingerprint()
    assert dfa.counterexample(ref) is not None


def test_comment_split_respects_quotes():
    assert _split_comment('"#" & P a   # ≡ x') == ('"#" & P a', "≡ x")
    assert _split_comment("P a") == ("P a", None)


BRASP_MAX_LENGTH = 9


def test_brasp_examples():
    blocks = _blocks("brasp.md", "brasp")
    assert blocks, "docs/brasp.md has no ```brasp block"
    for start, body in blocks:
        alphabet = regex = None
        for line in body.splitlines():
            _, comment = _split_comment(line)
            if comment and comment.startswith("alphabet:"):
                alphabet = tuple(comment[len("alphabet:"):].split())
            elif comment and comment.startswith("≡"):
                regex = comment[1:].strip()
        assert alphabet, f"docs/brasp.md:{start}: a ```brasp block must have '# alphabet: …'"
        program = parse_program(body, alphabet)
        if regex is None:
            continue
        ref = parse_regex(regex, alphabet)
        for n in range(BRASP_MAX_LENGTH + 1):
            tuples = list(itertools.product(range(len(alphabet)), repeat=n))
            words = np.array(tuples, dtype=np.int64).reshape(len(tuples), n)
            got = accepts_batch(program, words)
            states = np.full(words.shape[0], ref.initial, dtype=np.int64)
            for col in range(n):
                states = ref.transitions[states, words[:, col]]
            want = ref.accepting[states]
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (f"docs/brasp.md:{start}: program and {regex!r} disagree on "
                                   f"{[alphabet[i] for i in words[bad[0]]]}")


@pytest.mark.parametrize("doc", ["formulas.md", "brasp.md"])
def test_python_examples(doc):
    """The ```python blocks are doctests (interactive sessions) and must reproduce their output."""
    import doctest

    blocks = _blocks(doc, "python")
    assert blocks, f"docs/{doc} has no ```python block"
    for start, body in blocks:
        test = doctest.DocTestParser().get_doctest(body, {}, f"docs/{doc}:{start}", str(DOCS / doc), start)
        assert test.examples, f"docs/{doc}:{start}: a ```python block without >>> examples"
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, out=lambda s: None)
        result = runner.summarize(verbose=False)
        assert result.failed == 0, f"docs/{doc}:{start}: {result.failed} doctest example(s) failed"
