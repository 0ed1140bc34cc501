"""Tests of training and evaluation (langclass.models.training.train / langclass.models.training.evaluate)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError
from langclass.models.training.data import LanguageSampler
from langclass.models.training.evaluate import build_test_sets, describe, evaluate_lengths, longest_perfect_length
from langclass.models.nn.recognizer import RecognizerConfig
from langclass.models.nn.tokens import Vocabulary
from langclass.models.training.train import TrainConfig, TrainingCancelled, encode_batch, make_predict, train_recognizer

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a, b}
CONTAINS_B = DFA.from_table(["a", "b"], [[0, 1], [1, 1]], 0, [1])  # Σ*bΣ*


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


TINY = dict(d_model=16, n_heads=2, n_layers=1, d_ff=32)


def tiny_config(dfa: DFA, encoding=None) -> RecognizerConfig:
    return RecognizerConfig(alphabet=dfa.alphabet, encoding=encoding or {"name": "nope"}, **TINY)


# ----------------------------------------------------------------------------- N*
def test_longest_perfect_length_examples():
    assert longest_perfect_length({41: 1.0, 42: 1.0, 43: 0.998, 44: 1.0}) == 42
    assert longest_perfect_length({41: 0.5, 42: 1.0}) == 0  # first tested length fails: 0 (paper, Table 4)
    assert longest_perfect_length({}) == 0
    assert longest_perfect_length({"50": 1.0, "41": 1.0, "100": 1.0}) == 100  # JSON keys, unsorted
    assert longest_perfect_length({41: 1.0, 45: 1.0, 50: 0.9}) == 45  # sparse grid: tested lengths only


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 60), st.sampled_from([1.0, 1.0, 1.0, 0.5, 0.999])))
def test_longest_perfect_length_matches_definition(acc):
    # brute force: the largest tested N such that every tested length ≤ N is perfect, else 0
    candidates = [n for n in acc if all(acc[m] == 1.0 for m in acc if m <= n)]
    assert longest_perfect_length(acc) == (max(candidates) if candidates else 0)


def test_describe():
    d = describe([1.0, 0.5, 0.75])
    assert d["max"] == 1.0 and d["min"] == 0.5 and d["mean"] == pytest.approx(0.75)
    assert d["std"] == pytest.approx(np.std([1.0, 0.5, 0.75]))
    assert describe([])["count"] == 0


def test_evaluate_lengths_counts_exactly():
    s = LanguageSampler(AA, 12)
    sets = build_test_sets(s, [9, 10, 11, 12], per_length=40, seed=3)
    truth = lambda words: np.array([s.accepts(w) for w in words])
    assert evaluate_lengths(truth, sets) == {9: 1.0, 10: 1.0, 11: 1.0, 12: 1.0}
    # "accept iff no b" is right except on odd-length a^n
    no_b = lambda words: np.array([1 not in w for w in words])
    acc = evaluate_lengths(no_b, sets)
    assert acc[10] == 1.0 and acc[12] == 1.0
    assert acc[9] < 1.0 and acc[11] < 1.0
    assert longest_perfect_length(acc) == 0
    # reproducible, and independent of the other lengths tested
    assert build_test_sets(s, [10], 40, seed=3)[10] == sets[10]


# ----------------------------------------------------------------------------- batches
def test_encode_batch_matches_vocabulary_layout():
    words = [(0, 1, 1), (), (1,), (0, 0, 0, 0, 1)]
    ids, valid, eos = encode_batch(words, torch.device("cpu"))
    ref = Vocabulary(("a", "b")).batch_from_indices(words)
    assert torch.equal(ids, ref.ids)
    assert torch.equal(valid, ref.valid)
    assert torch.equal(eos, ref.eos_index)


def test_train_config_validation():
    with pytest.raises(InputError):
        TrainConfig(learning_rate=0.0)
    with pytest.raises(InputError):
        TrainConfig(train_lengths=(5, 2))
    with pytest.raises(InputError):
        TrainConfig(precision="float8")
    with pytest.raises(InputError):
        TrainConfig(patience=0)


# ----------------------------------------------------------------------------- training
def _params(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_training_is_reproducible_from_seed():
    s = LanguageSampler(AA, 20)
    conf = TrainConfig(learning_rate=1e-3, max_steps=6, batch_size=16, train_lengths=(1, 20), patience=None, device="cpu", seed=5, progress_every=1)
    a = train_recognizer(tiny_config(AA), conf, s)
    b = train_recognizer(tiny_config(AA), conf, s)
    assert torch.equal(_params(a.model), _params(b.model))
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
    c = train_recognizer(tiny_config(AA), TrainConfig(**{**conf.__dict__, "seed": 6}), s)
    assert not torch.equal(_params(a.model), _params(c.model))
    assert a.steps == 6 and a.stopped == "max_steps" and a.precision == "float32"


def test_checkpoint_resume_gives_the_same_model(tmp_path):
    s = LanguageSampler(AA, 20)
    base = dict(learning_rate=1e-3, batch_size=16, train_lengths=(1, 20), patience=None, device="cpu", seed=1, checkpoint_every=2)
    straight = train_recognizer(tiny_config(AA), TrainConfig(max_steps=8, **base), s)
    first = train_recognizer(tiny_config(AA), TrainConfig(max_steps=5, checkpoint_dir=str(tmp_path), **base), s)
    assert first.steps == 5 and (tmp_path / "last.pt").exists()
    resumed = train_recognizer(tiny_config(AA), TrainConfig(max_steps=8, checkpoint_dir=str(tmp_path), **base), s)
    assert resumed.resumed_from == 5 and resumed.steps == 8
    assert torch.allclose(_params(straight.model), _params(resumed.model), atol=1e-6)
    # a different configuration does not resume from that checkpoint
    other = train_recognizer(tiny_config(AA), TrainConfig(max_steps=2, checkpoint_dir=str(tmp_path), **{**base, "seed": 2}), s)
    assert other.resumed_from is None and other.steps == 2


def test_cancel_stops_promptly():
    s = LanguageSampler(AA, 20)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3

    conf = TrainConfig(learning_rate=1e-3, max_steps=1000, batch_size=8, train_lengths=(1, 10), device="cpu")
    with pytest.raises(TrainingCancelled) as e:
        train_recognizer(tiny_config(AA), conf, s, should_cancel=cancel)
    assert e.value.step == 3


def test_early_stop_on_an_easy_language_and_progress():
    """Σ*bΣ* (LTL[P]) is learnt by NoPE: training accuracy becomes perfect and training stops early."""
    s = LanguageSampler(CONTAINS_B, 40)
    seen = []
    conf = TrainConfig(learning_rate=3e-3, max_steps=600, batch_size=32, train_lengths=(1, 40), patience=20, device="cpu", seed=0, progress_every=5)
    r = train_recognizer(tiny_config(CONTAINS_B), conf, s, progress=seen.append)
    assert r.stopped == "early_stop" and r.steps < 600 and r.train_accuracy == 1.0
    assert seen and all(p["phase"] == "train" and p["total"] == 600 and p["step"] % 5 == 0 for p in seen)
    predict = make_predict(r.model, torch.device("cpu"))
    sets = build_test_sets(s, [20, 40], per_length=64, seed=0)
    acc = evaluate_lengths(predict, sets)
    assert acc[20] >= 0.95 and acc[40] >= 0.95


def test_make_predict_matches_single_word_forward():
    """Batched, de-duplicated prediction = the recognizer run on each word alone."""
    torch.manual_seed(0)
    from langclass.models.nn.recognizer import Recognizer

    model = Recognizer(tiny_config(AA, {"name": "rope_periodic", "periods": 2})).eval()
    rng = random.Random(0)
    words = [tuple(rng.randrange(2) for _ in range(rng.randrange(0, 30))) for _ in range(60)]
    words += words[:20]  # duplicates
    got = make_predict(model, torch.device("cpu"), batch_tokens=128)(words)
    alone = np.array([model.accepts([[AA.alphabet[i] for i in w]])[0] for w in words])
    assert got.tolist() == alone.tolist()


def test_bfloat16_autocast_path_runs_on_cpu():
    """The mixed-precision path used on GPUs (autocast to bfloat16) also runs on CPU; parameters stay float32."""
    s = LanguageSampler(AA, 20)
    conf = TrainConfig(learning_rate=1e-3, max_steps=3, batch_size=8, train_lengths=(1, 20), patience=None, device="cpu", precision="bfloat16")
    r = train_recognizer(tiny_config(AA, {"name": "rope_periodic", "periods": 2}), conf, s)
    assert r.precision == "bfloat16" and r.steps == 3
    assert all(p.dtype == torch.float32 for p in r.model.parameters())
    out = make_predict(r.model, torch.device("cpu"), "bfloat16")([(0, 0), (1,), ()])
    assert out.dtype == bool and out.shape == (3,)
