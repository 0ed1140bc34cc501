"""The README is a short user guide, and its class glossary and reading conventions are true.

* The README has at most 450 lines and the sections a newcomer needs (Quick start with its two
  commands, the tours, the glossary, the conventions, configuration, where the rest lives); every
  relative link in it names a file of the repository.
* The glossary has one row per class key of the classification record, each with a logic, an
  algebraic characterization, a member and a non-member — and each example is classified here, so a
  wrong example fails (over {a, b} unless the cell names another alphabet).
* The conventions' examples hold (future formulas are read before the first letter: ``a(a|b)*`` is
  in LTL[F,X], not LTL[F]; past formulas after the last letter: ``(a|b)*a`` is in LTL[P,Y], not LTL[P]).
* The benchmarks, measurement notes and reference text moved out of the README are still in docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import langclass
from langclass.core.algebra.lattice import CLASS_KEYS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _alphabet(note: str) -> list[str]:
    m = re.search(r"over \{([^}]*)\}", note)
    return [s.strip() for s in m.group(1).split(",")] if m else ["a", "b"]


def _rows() -> list[tuple[str, str, str, str, list[str], str, list[str]]]:
    section = README[README.index("## The classes"):README.index("## Reading conventions")]
    # a `|` inside a code span is escaped (`\|`, GitHub would split the cell on a bare one)
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        assert not re.search(r"[^\\ ]\|[^ ]", line.strip().strip("|")), f"an unescaped | inside a cell: {line}"
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == 5, line
        key, logic, algebra, member, non_member = cells
        mm, nm = re.match(r"`([^`]+)`(.*)", member), re.match(r"`([^`]+)`(.*)", non_member)
        assert mm and nm, line
        rows.append((key.strip("`"), logic, algebra, mm.group(1), _alphabet(mm.group(2)), nm.group(1), _alphabet(nm.group(2))))
    return rows


def test_readme_is_a_short_guide() -> None:
    lines = README.splitlines()
    assert len(lines) <= 450, len(lines)
    headings = [line[3:] for line in lines if line.startswith("## ")]
    for needed in ("Quick start", "API tour", "CLI tour", "Python API", "The classes", "Reading conventions",
                   "Experiments and jobs", "Configuration", "Where the rest lives"):
        assert needed in headings, needed
    quick = README[README.index("## Quick start"):README.index("## API tour")]
    first = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    assert [line.split("#")[0].strip() for line in first.splitlines()] == ["make serve", "make test"]
    assert "3–5 minutes" in quick and "Chromium" in quick and ".ci/run" in quick
    assert re.search(r"^make serve > \S+ 2>&1 &", quick, re.M), "the background form of make serve"


def test_readme_links_name_existing_files() -> None:
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+\.(?:md|png))(?:#[\w-]+)?\)", README)
    assert len(links) >= 20
    for link in links:
        assert (ROOT / link).is_file(), link


def test_glossary_has_every_class_key_once() -> None:
    keys = [row[0] for row in _rows()]
    record = langclass.classify("a", alphabet="ab").to_dict()["classes"]
    assert sorted(keys) == sorted(CLASS_KEYS) == sorted(record), set(keys) ^ set(record)
    assert len(keys) == len(set(keys))
    for key, logic, algebra, *_ in _rows():
        assert logic and algebra, key


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row[0])
def test_glossary_member_and_non_member_hold(row: tuple) -> None:
    key, _, _, member, member_alphabet, non_member, non_member_alphabet = row
    got = langclass.classify(member, alphabet=member_alphabet).classes[key]
    assert got.member is True, (key, member, got.reason)
    got = langclass.classify(non_member, alphabet=non_member_alphabet).classes[key]
    assert got.member is False, (key, non_member, got.reason)


def test_reading_convention_examples_hold() -> None:
    conventions = README[README.index("## Reading conventions"):README.index("## Experiments and jobs")]
    assert "before the first letter" in conventions and "after the last letter" in conventions
    first_a = langclass.classify("a(a|b)*", alphabet="ab").classes
    assert first_a["ltl_f"].member is False and first_a["ltl_f_x"].member is True
    last_a = langclass.classify("(a|b)*a", alphabet="ab").classes
    assert last_a["ltl_p"].member is False and last_a["ltl_p_y"].member is True and last_a["ltl_f"].member is True
    assert langclass.classify("(aa)*", alphabet="a").classes["group"].member is True
    assert langclass.classify("(aa)*", alphabet="ab").classes["group"].member is False
    # the formula example: the class is the language's, and the alphabet is part of the language
    assert langclass.classify(formula="P(b & Y a)", alphabet="ab").classes["ltl_p"].member is True
    abc = langclass.classify(formula="P(b & Y a)", alphabet="abc").classes
    assert abc["ltl_p"].member is False and abc["ltl_p_y"].member is True
    # how words are written in reasons
    from langclass.core.algebra.classes.base import show

    for word, shown in ((["a", "b", "b", "a"], "`abba`"), (["0", "1", "1", "0"], '`"0 1 1 0"`'),
                        (["(", "(", ")", ")"], '`"( ( ) )"`'), (["x1", "x2"], "`x1·x2`")):
        assert shown in conventions and f"`{show(word)}`" == shown, (word, show(word))


@pytest.mark.parametrize("doc, facts", [
    ("docs/benchmarks.md", ["| backend | `/healthz` p99 (client / app)", "SQLite 20,000 cases in 1,707 s",
                            "ratio classify / healthz throughput, repeated: median 0.62", "T8 closure",
                            "`--help` 2.9 s of imports"]),
    ("docs/training.md", ["wall 377.0 s → 111.8 s (speedup 3.37×)", "peak RSS 349 MiB", "pj_bias"]),
    ("docs/container.md", ["PASS  23 checks in 1052 s", "make container-check"]),
    ("docs/cli.md", ["3,762,374 languages", "| LTL[P,MOD] \\ LTL[P] | 4 |", "**Batch.**"]),
    ("docs/constructions.md", ["58 models built, 58\nexact", "| Tomita 3 `0*((11)+0+\\|1(11)*(00)+)*1*`"]),
    ("docs/api.md", ["## Errors", "Malformed HTTP", "light lane", "## Access"]),
    ("docs/configuration.md", ["`LANGCLASS_JOB_TIME_LIMIT_S`", "## Changing the port", "## PostgreSQL"]),
    ("docs/development.md", ["Layout, one folder per stage"]),
])
def test_moved_text_lives_in_docs(doc: str, facts: list[str]) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    for fact in facts:
        assert fact in text, (doc, fact)
