"""The recognizer of one run of an experiment: its :class:`~langclass.models.nn.recognizer.RecognizerConfig`
from the grid encoding, the run settings, the training setting (strict or causal) and the task, and the
manifest digests recorded with every run (:mod:`langclass.models.experiments.experiment`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError
from langclass.models.experiments.experiment_report import GridEncoding

__all__ = ["HARD_SCORE_GRID", "model_config", "model_manifest"]

HARD_SCORE_GRID = 1.0
"""Trained hard-attention models (``hard_<family>``) choose on scores rounded to integers
(``RecognizerConfig.score_grid``): with exact float scores the ties the constructions need (a NoPE
head whose keys all tie attends to the previous position) are a measure-zero set training never
reaches; measured in docs/training.md."""

def model_config(dfa: DFA, enc: GridEncoding, settings: Mapping[str, Any], setting: str = "strict",
                  task: str = "recognition") -> Any:
    """The recognizer of one grid encoding in ``setting`` (mask and readout; see the module doc) for
    ``task`` (``outputs`` = the minimal DFA's states for state prediction); ``hard_<family>`` names
    unique hard attention (strict mask, rightmost ties, scores rounded to :data:`HARD_SCORE_GRID`)."""
    from langclass.core.precision.encoding_families import attention_of
    from langclass.models.nn.recognizer import RecognizerConfig

    if "name" in enc.params:
        raise InputError("encoding params must not contain 'name'", field="encodings.params.name")
    params = dict(enc.params)
    if enc.name == "learned":  # a row for every position the run will see: BOS w EOS (strict), BOS w (causal)
        framing, extra = ("BOS w", 1) if setting == "causal" else ("BOS w EOS", 2)
        longest = max(max(settings["train_lengths"]), max(settings["test_lengths"]))
        given = params.setdefault("max_positions", longest + 2)  # the default as documented, in both settings
        if isinstance(given, int) and not isinstance(given, bool) and 1 <= given < longest + extra:
            raise InputError(f"a learned table of {given} rows has no row for the run's longest strings (length "
                             f"{longest} needs {longest + extra} rows as {framing}); give max_positions ≥ "
                             f"{longest + extra} or leave it out", field="encoding.max_positions")
    attention, family = attention_of(enc.name)  # hard_<family>: unique hard attention, strict, rightmost ties
    try:
        return RecognizerConfig(
            alphabet=tuple(dfa.alphabet),
            d_model=settings["d_model"],
            n_heads=settings["n_heads"],
            n_layers=settings["n_layers"],
            d_ff=settings["d_ff"],
            attention=attention,
            tie="rightmost",
            score_grid=HARD_SCORE_GRID if attention == "hard" else None,
            mask="nonstrict" if setting == "causal" else "strict",
            readout="last" if setting == "causal" else "eos",
            outputs=dfa.num_states if task == "state_prediction" else 1,
            norm="pre",
            length_scale=settings.get("length_scale", "none"),
            encoding={"name": family, **params},
        )
    except TypeError as exc:  # an unknown keyword for the encoding family
        raise InputError(f"encoding {enc.name!r}: bad parameters {enc.params}: {exc}", field="encodings.params") from exc


def model_manifest(model: Any) -> tuple[dict[str, Any], str, str]:
    """The encoding's manifest and SHA-256 digest (*Transformer System M3.4*, §0x01A, "rotary call manifest") and the
    recognizer's architecture digest."""
    manifest = json.loads(json.dumps(model.encoding.manifest(), default=str))
    return manifest, model.encoding.digest(), model.digest()
