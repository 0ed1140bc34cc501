"""The vendored ground truth (42 languages, see /work/shared/languages/README.md) and the map
from its ``expected`` keys to the class keys of ``langclass.core.algebra.lattice``; shared by the tests."""

from __future__ import annotations

import json
from pathlib import Path

GROUND_TRUTH_FILE = Path(__file__).parent / "ground_truth.json"
GT = json.loads(GROUND_TRUTH_FILE.read_text())
LANGUAGES: list[dict] = GT["languages"]
BY_ID: dict[str, dict] = {lang["id"]: lang for lang in LANGUAGES}

# ground-truth ``expected`` key -> class key of the analysis record / API
EXPECTED_TO_KEY = {
    "r_trivial": "ltl_p",
    "qr": "ltl_p_mod",
    "lr_or_ltl_p_y": "ltl_p_y",
    "star_free": "star_free",
    "stutter_invariant": "stutter_invariant",
    "da": "fo2",
    "qda": "fo2_mod",
    "quasi_aperiodic": "fo_mod",
    "j_trivial": "piecewise_testable",
    "locally_testable": "locally_testable",
    "group": "group",
}
