"""Tests of langclass.models.training.train_batched: runs trained together equal the runs trained alone."""

from __future__ import annotations

import pytest
import torch

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError
from langclass.models.training.data import LanguageSampler
from langclass.models.experiments.experiment import run_experiment
from langclass.models.nn.recognizer import RecognizerConfig
from langclass.models.training.train import TrainConfig, TrainingCancelled, make_predict, train_recognizer
from langclass.models.training.evaluate import build_test_sets, evaluate_lengths
from langclass.models.training.train_batched import BATCHABLE_FAMILIES, can_batch, evaluate_group, train_group

AA = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a, b}
AB = DFA.from_table(["a", "b"], [[1, 2], [2, 0], [2, 2]], 0, [0])  # (ab)* over {a, b}

ENCODINGS = [{"name": "nope"}, {"name": "rope"}, {"name": "rope_periodic", "periods": 2}, {"name": "sinusoidal"},
             {"name": "sinusoidal_periodic", "periods": 2}, {"name": "alibi"}]


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py


def _configs(seeds, **kw):
    base = dict(learning_rate=1e-2, max_steps=40, batch_size=16, train_lengths=(1, 8), patience=4, device="cpu", precision="float32")
    base.update(kw)
    return [TrainConfig(seed=s, **base) for s in seeds]


WORDS = [tuple(int(c) for c in format(i, "b")) for i in range(1, 300)]  # letter indices, lengths 1..9


@pytest.mark.slow
def test_group_equals_runs_alone_each_stopping_at_its_own_step():
    """(ab)*, periodic RoPE, three seeds: the seeds stop early at different steps (one runs the whole
    budget); every run takes the same steps, reaches the same loss and decides the same words as
    train_recognizer alone."""
    sampler = LanguageSampler(AB.canonical(), 16)
    mc = RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, d_ff=32,
                          encoding={"name": "rope_periodic", "periods": 2})
    cfgs = _configs([0, 1, 3])
    alone = [train_recognizer(mc, c, sampler) for c in cfgs]
    events = []
    together = train_group(mc, cfgs, [sampler] * 3, progress=events.append)
    assert len({r.steps for r in alone}) > 1 and {r.stopped for r in alone} == {"early_stop", "max_steps"}
    for a, b in zip(alone, together):
        assert (a.steps, a.stopped) == (b.steps, b.stopped)
        assert b.final_loss == pytest.approx(a.final_loss, rel=1e-4, abs=1e-6)
        assert b.train_accuracy == a.train_accuracy
        assert [h["step"] for h in b.history] == [h["step"] for h in a.history]
        pa = make_predict(a.model, torch.device("cpu"))(WORDS)
        pb = make_predict(b.model, torch.device("cpu"))(WORDS)
        assert (pa == pb).all()
        assert not b.model.training
    assert events and events[0]["runs_active"] == 3 and events[-1]["runs_active"] < 3


def test_one_group_of_every_batchable_family_trains_like_alone():
    """Every family of BATCHABLE_FAMILIES in one group (one run each, own seed and learning rate):
    the first steps' losses equal training alone (float reassociation only), and the trained models
    decide the same words."""
    assert {e["name"] for e in ENCODINGS} == set(BATCHABLE_FAMILIES)
    sampler = LanguageSampler(AA.canonical(), 12)
    mcs = [RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, d_ff=32, encoding=e) for e in ENCODINGS]
    cfgs = [c for i in range(len(ENCODINGS))
            for c in _configs([i], max_steps=3, patience=None, learning_rate=(1e-3, 3e-3)[i % 2], train_lengths=(1, 10))]
    alone = [train_recognizer(mc, c, sampler) for mc, c in zip(mcs, cfgs)]
    together = train_group(mcs, cfgs, [sampler] * len(cfgs), length_buckets=3)
    for a, b in zip(alone, together):
        assert b.steps == a.steps == 3 and b.stopped == "max_steps"
        for ha, hb in zip(a.history, b.history):
            assert hb["loss"] == pytest.approx(ha["loss"], rel=1e-4)
        assert (make_predict(a.model, torch.device("cpu"))(WORDS) == make_predict(b.model, torch.device("cpu"))(WORDS)).all()


def test_evaluate_group_gives_the_accuracies_of_each_model():
    """Grouped evaluation on shared test sets = evaluate_lengths with each model's predict."""
    sampler = LanguageSampler(AB.canonical(), 30)
    mcs = [RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, d_ff=32, encoding=e) for e in ENCODINGS[:3]]
    cfgs = [c for i in range(3) for c in _configs([i], max_steps=30, patience=None, learning_rate=1e-2, train_lengths=(1, 10))]
    trained = train_group(mcs, cfgs, [sampler] * 3)
    tests = build_test_sets(sampler, [11, 12, 20, 30], 40, 0)
    grouped = evaluate_group([t.model for t in trained], tests)
    alone = [evaluate_lengths(make_predict(t.model, torch.device("cpu")), tests) for t in trained]
    assert grouped == alone
    assert any(v not in (0.0, 1.0) for acc in alone for v in acc.values())  # not a trivial all-right/all-wrong case
    stop = iter([False, False, True])
    partial = evaluate_group([t.model for t in trained], tests, should_cancel=lambda: next(stop))
    assert [sorted(p) for p in partial] == [[11, 12]] * 3


def test_group_checks_its_runs_and_cancels():
    sampler = LanguageSampler(AA.canonical(), 12)
    mc = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, d_ff=8)
    with pytest.raises(InputError) as e:
        train_group(mc, _configs([0]) + _configs([1], max_steps=7), [sampler] * 2)
    assert e.value.field == "max_steps"
    with pytest.raises(InputError) as e:
        train_group([mc, RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1, d_ff=8)], _configs([0, 1]), [sampler] * 2)
    assert e.value.field == "model_configs"
    with pytest.raises(InputError):
        train_group(mc, [], [])
    with pytest.raises(InputError):
        train_group(mc, _configs([0, 1]), [sampler] * 2, length_buckets=0)
    with pytest.raises(InputError):
        train_group(mc, _configs([0], train_lengths=(1, 20)), [sampler])
    hard = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, d_ff=8, attention="hard")
    pj = RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, d_ff=8, encoding={"name": "pj_bias"})
    assert can_batch(mc, _configs([0])[0]) and not can_batch(mc, _configs([0], precision="bfloat16")[0])
    assert not can_batch(hard, _configs([0])[0]) and not can_batch(pj, _configs([0])[0])
    assert not can_batch(mc, _configs([0], checkpoint_dir="/tmp/x")[0])
    with pytest.raises(InputError):
        train_group(pj, _configs([0, 1]), [sampler] * 2)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 2

    with pytest.raises(TrainingCancelled) as c:
        train_group(mc, _configs([0, 1]), [sampler] * 2, should_cancel=cancel)
    assert c.value.step == 2


@pytest.mark.slow
def test_run_experiment_batched_gives_the_sequential_results():
    """The grid of a tiny Table 2 spec (2 encodings × 2 seeds): batched training (the default: all
    four runs share a shape) yields the runs of sequential training (steps, N*, verdicts), in grid
    order, each marked with its group size; the spec's ``batched: false`` trains them alone."""
    spec = {"language": AA.to_canonical_dict(), "encodings": ["nope", {"name": "rope_periodic", "params": {"periods": 2}}],
            "profile": "quick", "seeds": [0, 1],
            "overrides": {"n_layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32, "max_steps": 20, "batch_size": 16,
                          "patience": 5, "test_lengths": [41, 44], "eval_per_length": 16, "train_lengths": [1, 12]},
            "prediction": {"sufficient": ["rope_periodic"]}}
    seq = run_experiment({**spec, "batched": False})
    events = []
    bat = run_experiment(spec, progress=events.append)
    assert [r["trained_with"] for r in seq["runs"]] == [1, 1, 1, 1] and seq["batched"] is False
    assert [r["trained_with"] for r in bat["runs"]] == [4, 4, 4, 4] and bat["batched"] is True
    keys = ("encoding", "seed", "learning_rate", "steps", "stopped", "longest_perfect_length", "accuracy_by_length")
    assert [{k: r[k] for k in keys} for r in bat["runs"]] == [{k: r[k] for k in keys} for r in seq["runs"]]
    assert {k: v["status"] for k, v in bat["verdict"]["per_encoding"].items()} == \
        {k: v["status"] for k, v in seq["verdict"]["per_encoding"].items()}
    train_events = [e for e in events if e["phase"] == "train"]
    assert train_events and all(e["group"] == [0, 1, 2, 3] for e in train_events)
    assert events[-1]["phase"] == "done"


def test_encode_runs_is_encode_batch_of_each_run():
    """The step's batches encoded at once: each run's rows are encode_batch's, padded with PAD to
    the longest training length + 2 (letter 0 is not taken for padding)."""
    from langclass.models.training.train import encode_batch
    from langclass.models.training.train_batched import _encode_runs

    runs = [[(0,), (1, 0, 0), (), (0, 0)], [(1, 1, 1, 0), (0,), (1,), ()]]
    ids, n = _encode_runs(runs, 5)
    assert ids.shape == (2, 4, 7) and n.tolist() == [[1, 3, 0, 2], [4, 1, 1, 0]]
    for a, run in enumerate(runs):
        ref = encode_batch(run, torch.device("cpu"))[0].numpy()
        assert (ids[a, :, :ref.shape[1]] == ref).all() and (ids[a, :, ref.shape[1]:] == 0).all()
