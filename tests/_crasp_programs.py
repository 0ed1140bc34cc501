"""Hand-written C-RASP programs with independent oracles, shared by the program and compiler tests."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from langclass.core.logic.crasp import RELATIONS, CraspOp, CraspOp as Op, CraspProgram


def ab_star() -> CraspProgram:
    """(ab)*: after an a the difference #a−#b is 1, after a b it is 0, and it ends at 0 (depth 2)."""
    return CraspProgram(("a", "b"), (
        Op("Qa", "symbol", ("a",)), Op("Qb", "symbol", ("b",)),
        Op("A", "count", ("Qa",)), Op("B", "count", ("Qb",)),
        Op("D", "linear", (((1, "A"), (-1, "B")), 0)),
        Op("One", "linear", ((), 1)), Op("Zero", "linear", ((), 0)),
        Op("DneOne", "compare", ("D", "!=", "One")), Op("DneZero", "compare", ("D", "!=", "Zero")),
        Op("BadA", "and", ("Qa", "DneOne")), Op("BadB", "and", ("Qb", "DneZero")),
        Op("Bad", "or", ("BadA", "BadB")), Op("NBad", "count", ("Bad",)),
        Op("Clean", "compare", ("NBad", "==", "Zero")), Op("Even", "compare", ("D", "==", "Zero")),
        Op("Out", "and", ("Clean", "Even")),
    ), "Out", True)


def ab_ba_star() -> CraspProgram:
    """(ab|ba)*: every prefix has |#a−#b| ≤ 1 and the word ends with #a = #b (depth 2)."""
    return CraspProgram(("a", "b"), (
        Op("Qa", "symbol", ("a",)), Op("Qb", "symbol", ("b",)),
        Op("A", "count", ("Qa",)), Op("B", "count", ("Qb",)),
        Op("D", "linear", (((1, "A"), (-1, "B")), 0)),
        Op("Zero", "linear", ((), 0)),
        Op("Hi", "linear", (((1, "A"), (-1, "B")), -1)), Op("Lo", "linear", (((1, "B"), (-1, "A")), -1)),
        Op("TooHigh", "compare", ("Hi", ">", "Zero")), Op("TooLow", "compare", ("Lo", ">", "Zero")),
        Op("Bad", "or", ("TooHigh", "TooLow")), Op("NBad", "count", ("Bad",)),
        Op("Clean", "compare", ("NBad", "==", "Zero")), Op("Bal", "compare", ("D", "==", "Zero")),
        Op("Out", "and", ("Clean", "Bal")),
    ), "Out", True)


def majority() -> CraspProgram:
    """Strictly more a than b (depth 1)."""
    return CraspProgram(("a", "b"), (
        Op("Qa", "symbol", ("a",)), Op("Qb", "symbol", ("b",)),
        Op("A", "count", ("Qa",)), Op("B", "count", ("Qb",)),
        Op("Out", "compare", ("A", ">", "B")),
    ), "Out", False)


def dyck1() -> CraspProgram:
    """Dyck-1 with a = open, b = close: no prefix has more b than a, and the word ends balanced."""
    return CraspProgram(("a", "b"), (
        Op("Qa", "symbol", ("a",)), Op("Qb", "symbol", ("b",)),
        Op("A", "count", ("Qa",)), Op("B", "count", ("Qb",)),
        Op("Under", "compare", ("A", "<", "B")), Op("NUnder", "count", ("Under",)),
        Op("Zero", "linear", ((), 0)),
        Op("Clean", "compare", ("NUnder", "<=", "Zero")), Op("Bal", "compare", ("A", "==", "B")),
        Op("Out", "and", ("Clean", "Bal")),
    ), "Out", True)


def constants_depth3() -> CraspProgram:
    """Depth 3 with constants and scalar multiples over {a, b, c}: among the positions where
    2·#a ≥ #b + 1, count those where the number of such positions so far is at least 3·#c − 2, and
    accept when that count exceeds half the length minus 1 (2·N > L − 2); also reads ¬ and true."""
    return CraspProgram(("a", "b", "c"), (
        Op("Qa", "symbol", ("a",)), Op("Qb", "symbol", ("b",)), Op("Qc", "symbol", ("c",)),
        Op("T", "const_bool", (True,)), Op("L", "count", ("T",)),
        Op("A", "count", ("Qa",)), Op("B", "count", ("Qb",)), Op("C", "count", ("Qc",)),
        Op("A2", "linear", (((2, "A"),), 0)), Op("B1", "linear", (((1, "B"),), 1)),
        Op("P1", "compare", ("A2", ">=", "B1")), Op("N1", "count", ("P1",)),
        Op("C3", "linear", (((3, "C"),), -2)), Op("P2", "compare", ("N1", ">=", "C3")),
        Op("NotQb", "not", ("Qb",)), Op("P2b", "or", ("P2", "NotQb")),
        Op("N2", "count", ("P2b",)), Op("Twice", "linear", (((2, "N2"),), 0)),
        Op("Lm2", "linear", (((1, "L"),), -2)), Op("Out", "compare", ("Twice", ">", "Lm2")),
    ), "Out", False)


def oracle_constants_depth3(w: str) -> bool:
    if not w:
        return False
    n1 = n2 = 0
    for i in range(len(w)):
        p = w[: i + 1]
        p1 = 2 * p.count("a") >= p.count("b") + 1
        n1 += p1
        p2 = n1 >= 3 * p.count("c") - 2
        n2 += p2 or w[i] != "b"
    return 2 * n2 > len(w) - 2


def oracle_dyck1(w: str) -> bool:
    h = 0
    for ch in w:
        h += 1 if ch == "a" else -1
        if h < 0:
            return False
    return h == 0


ORACLES = {
    "ab_star": (ab_star, lambda w: re.fullmatch("(ab)*", w) is not None),
    "ab_ba_star": (ab_ba_star, lambda w: re.fullmatch("(ab|ba)*", w) is not None),
    "majority": (majority, lambda w: w.count("a") > w.count("b")),
    "dyck1": (dyck1, oracle_dyck1),
    "constants_depth3": (constants_depth3, oracle_constants_depth3),
}
EXPECTED_DEPTH = {"ab_star": 2, "ab_ba_star": 2, "majority": 1, "dyck1": 2, "constants_depth3": 3}


@st.composite
def programs(draw):
    alphabet = ("a", "b")
    ops: list[CraspOp] = [CraspOp("Qa", "symbol", ("a",)), CraspOp("Qb", "symbol", ("b",))]
    bools, counts = ["Qa", "Qb"], []
    for k in range(draw(st.integers(1, 12))):
        name = f"v{k}"
        choices = ["not", "and", "or", "count", "const_bool"] + (["linear", "compare"] if counts else [])
        kind = draw(st.sampled_from(choices))
        if kind == "not":
            op = CraspOp(name, kind, (draw(st.sampled_from(bools)),))
        elif kind in ("and", "or"):
            op = CraspOp(name, kind, tuple(draw(st.lists(st.sampled_from(bools), min_size=1, max_size=3))))
        elif kind == "count":
            op = CraspOp(name, kind, (draw(st.sampled_from(bools)),))
        elif kind == "const_bool":
            op = CraspOp(name, kind, (draw(st.booleans()),))
        elif kind == "linear":
            terms = draw(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(counts)), max_size=3))
            op = CraspOp(name, kind, (tuple(terms), draw(st.integers(-3, 3))))
        else:
            op = CraspOp(name, kind, (draw(st.sampled_from(counts)), draw(st.sampled_from(RELATIONS)),
                                      draw(st.sampled_from(counts))))
        ops.append(op)
        (bools if op.type == "bool" else counts).append(name)
    return CraspProgram(alphabet, tuple(ops), draw(st.sampled_from(bools)), draw(st.booleans()))
