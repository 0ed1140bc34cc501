"""Provenance of a portable model (language, class, theorem, route, verification) and the downloads.

:func:`construct_provenance` reads a :func:`~langclass.models.construct.verify.run_construction`
record; :func:`train_provenance` one run of :func:`~langclass.models.experiments.experiment.run_experiment`.
:class:`BestRuns` keeps, while an experiment runs, the files of the best run of every encoding (or of
every run) so that only bytes — never live models — are held.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langclass.core.base.errors import InputError
from langclass.models.portable.export import DEFAULT_LAG_TOKENS, model_files, zip_models

__all__ = ["construct_provenance", "train_provenance", "BestRuns", "construct_files", "run_folder", "run_rank"]


def _language(dfa: Any) -> dict[str, Any] | None:
    if dfa is None:
        return None
    canonical = dfa.canonical()
    return {"id": dfa.fingerprint(), "alphabet": list(dfa.alphabet), "num_states": canonical.num_states,
            "canonical_dfa": dfa.to_canonical_dict()}


def construct_provenance(result: Mapping[str, Any], dfa: Any) -> dict[str, Any]:
    """Provenance of a constructed model from its construction record and the language's DFA.

    ``class``: the language's class (formula input), else the fragment of the formula built, else
    star-free / FO[<,MOD_m] for a hard-attention program, C-RASP for the causal setting (``program``:
    the C-RASP program's text); ``theorem``: the construction's source;
    ``verification``: what :func:`run_construction` checked (every word to ``all_words_up_to``, the
    random words to ``random_words_up_to``, N_max where bounded)."""
    model = result.get("model") or {}
    modulus = result.get("modulus") or 1
    causal = result.get("setting") == "causal"
    cls = result.get("language_class") or result.get("fragment") or ("C-RASP" if causal else None) or (
        ("star-free" if modulus == 1 else f"FO[<,MOD_{modulus}]") if result.get("attention") == "hard" else None)
    program = (result.get("crasp") or {}).get("text") if causal else result.get("program")
    return {
        "kind": "construct",
        "language": _language(dfa),
        "class": cls,
        "fragment": result.get("fragment"),
        "formula": result.get("formula") if len(result.get("formula") or "") <= 20_000 else None,
        "program": program if len(program or "") <= 20_000 else None,
        "theorem": model.get("source"),
        "route": (result.get("route") or {}).get("route"),
        "route_detail": result.get("route"),
        "attention": result.get("attention"),
        "mask": result.get("mask"),
        "encoding": result.get("encoding"),
        "verification": {
            "exact": result.get("exact"),
            "all_words_up_to": result.get("all_words_up_to"),
            "words_checked": result.get("words_checked"),
            "random_words_checked": result.get("random_words_checked"),
            "random_words_up_to": result.get("random_words_up_to"),
            "n_max": result.get("n_max"),
        },
        "code_version": result.get("code_version"),
    }


def construct_files(model: Any, dfa: Any, result: Mapping[str, Any], *, n_lags: int = DEFAULT_LAG_TOKENS) -> dict[str, bytes]:
    """The download of a constructed model: :func:`~langclass.models.portable.export.model_files` with its provenance."""
    return model_files(model, construct_provenance(result, dfa), n_lags=n_lags)


def train_provenance(run: Mapping[str, Any], dfa: Any, prediction: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Provenance of a trained recognizer: the language, the run (encoding, seed, learning rate,
    steps) and its evaluation (accuracy by length, the longest length N* with accuracy 1 up to it)."""
    return {
        "kind": "train",
        "language": _language(dfa),
        "class": None,
        "prediction": dict(prediction) if prediction else None,
        "theorem": None,
        "route": "trained",
        "encoding": run.get("encoding"),
        "encoding_name": run.get("encoding_name"),
        "encoding_params": run.get("encoding_params"),
        "seed": run.get("seed"),
        "learning_rate": run.get("learning_rate"),
        "steps": run.get("steps"),
        "verification": {
            "evaluated": "accuracy on sampled test words per length (not a proof)",
            "accuracy": run.get("accuracy"),
            "longest_perfect_length": run.get("longest_perfect_length"),
            "accuracy_by_length": run.get("accuracy_by_length"),
        },
    }


def run_folder(run: Mapping[str, Any], index: int | None = None) -> str:
    """A safe folder name for a run: ``enc-<encoding>`` (``-s<seed>-lr<rate>`` for every run), letters,
    digits, ``.``, ``_`` and ``-`` only."""
    label = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in str(run.get("encoding")))[:80] or "encoding"
    if index is None:
        return f"enc-{label}"
    return f"run{index:04d}-{label}-s{run.get('seed')}-lr{run.get('learning_rate')}"


def run_rank(run: Mapping[str, Any]) -> tuple[int, float]:
    """How good a trained run is, for keeping the best of an encoding: its N* (longest perfect
    length), then its accuracy (missing values count as 0; a tie keeps the earlier run)."""
    return (run.get("longest_perfect_length") or 0, run.get("accuracy") or 0.0)


class BestRuns:
    """Collects the downloads of an experiment's runs: the best run per encoding (highest
    longest-perfect-length, then accuracy, then the earliest), or every run with ``all_runs``.

    Use ``on_model`` as :func:`run_experiment`'s callback; :meth:`zip` builds the download."""

    def __init__(self, dfa: Any, prediction: Mapping[str, Any] | None = None, *, all_runs: bool = False,
                 n_lags: int = DEFAULT_LAG_TOKENS) -> None:
        self.dfa, self.prediction, self.all_runs, self.n_lags = dfa, prediction, all_runs, n_lags
        self.best: dict[str, tuple[tuple, dict[str, bytes], dict[str, Any]]] = {}
        self.refused: dict[str, str] = {}
        self.count = 0

    def on_model(self, run: Mapping[str, Any], model: Any) -> bool:
        """Keep the run's files if it is the best of its encoding so far (every run with ``all_runs``);
        True when kept. A model the portable format cannot carry (a state-prediction head) is not
        kept: its folder's reason goes to :attr:`refused` and the training goes on."""
        index = self.count
        self.count += 1
        key = (*run_rank(run), -index)
        folder = run_folder(run, index if self.all_runs else None)
        if not self.all_runs and folder in self.best and self.best[folder][0] >= key:
            return False
        try:
            files = model_files(model, train_provenance(run, self.dfa, self.prediction), n_lags=self.n_lags)
        except InputError as err:  # no portable form: the run stands, only its download is missing
            self.refused[folder] = err.detail
            return False
        self.best[folder] = (key, files, {"encoding": run.get("encoding"), "seed": run.get("seed"),
                                          "learning_rate": run.get("learning_rate"), "accuracy": run.get("accuracy"),
                                          "longest_perfect_length": run.get("longest_perfect_length")})
        return True

    def folders(self) -> dict[str, dict[str, bytes]]:
        """``{folder: files}`` of the kept runs."""
        return {folder: files for folder, (_, files, _) in self.best.items()}

    def runs(self) -> dict[str, dict[str, Any]]:
        """``{folder: {encoding, seed, learning_rate, accuracy, longest_perfect_length}}`` of the kept runs."""
        return {folder: info for folder, (_, _, info) in self.best.items()}

    def zip(self) -> bytes | None:
        """The zip of the kept runs (one folder each, one runner at the top); None without runs."""
        return zip_models(self.folders()) if self.best else None
