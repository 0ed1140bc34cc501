"""Portable trained models of the newer encodings (issue 36, follow-up; docs/models.md): learned
absolute positions (strict and causal setting), recency heads with periodic RoPE (``recency_periodic``)
and trained unique hard attention whose choice is made on scores rounded to 1/``score_grid``
(``hard_nope``, ``hard_mod_onehot``). Each is trained for a few steps (through run_experiment's
``on_model`` and :class:`BestRuns`, as a user's train job saves it) or built with random weights
(large enough that the learned rows, the slopes and the grid's ties matter), saved, then run by the
standalone runner in a fresh isolated process without langclass (tests/test_portable.py's driver):
its logits must equal the original's bit for bit on every word to length 10 and on random words up
to length 1,000. The new config fields are checked against tampering like the old ones."""

from __future__ import annotations

import json

import pytest
import torch

from langclass.core.ingest.regex import regex_to_dfa
from langclass.models.experiments.experiment import run_experiment
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.portable import runner as R
from langclass.models.portable.export import portable_parts, save_model
from langclass.models.portable.provenance import BestRuns

from test_portable import (ALL_UP_TO, FAST_RANDOM_WORDS, RANDOM_MAX, RANDOM_WORDS, _error_of, _isolated, _original_logits,
                           _tiny_experiment, _words)

ROWS = RANDOM_MAX + 2  # a learned table with a row for every position of BOS w EOS up to |w| = 1,000
TRAINED = {  # setting → {grid encoding: params}
    "strict": {"learned": {"max_positions": ROWS}, "recency_periodic": {"periods": 2}, "hard_nope": {},
               "hard_mod_onehot": {"period": 2}},
    "causal": {"learned": {"max_positions": ROWS}},
}
RANDOM = {  # Recognizer options, random weights scaled up (the rows, slopes and ties are visible in the logits)
    "learned-post-norm": dict(norm="post", encoding={"name": "learned", "max_positions": ROWS}),
    "recency-periodic-three-of-four": dict(n_heads=4, d_model=16, encoding={"name": "recency_periodic", "periods": [2, 3],
                                                                            "heads": 3, "slope_init": 2.0}),
    "hard-grid-coarse-leftmost": dict(attention="hard", tie="leftmost", score_grid=0.5, encoding={"name": "nope"}),
}


def _random(kw: dict) -> Recognizer:
    torch.manual_seed(3)
    model = Recognizer(RecognizerConfig(alphabet=("a", "b"), **{"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, **kw})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    return model


@pytest.fixture(scope="module")
def trained_models(tmp_path_factory):
    """``{name: (model, saved dir)}``: the trained runs (saved through BestRuns) and the random-weight models."""
    tmp = tmp_path_factory.mktemp("portable-trained")
    dfa = regex_to_dfa("((a|b)(a|b))*", ["a", "b"])
    out = {}
    for setting, encodings in TRAINED.items():
        best, kept = BestRuns(dfa, all_runs=True), {}

        def on_model(run, model, best=best, kept=kept):
            best.on_model(run, model)
            kept[run["encoding"]] = model

        run_experiment({**_tiny_experiment(dfa, encodings), "setting": setting}, on_model=on_model, batched=False)
        assert set(kept) == set(encodings)
        for folder, info in best.runs().items():
            d = tmp / f"{setting}-{info['encoding']}"
            d.mkdir()
            for fname, data in best.folders()[folder].items():
                (d / fname).write_bytes(data)
            out[f"{setting}:{info['encoding']}"] = (kept[info["encoding"]], d)
    for name, kw in RANDOM.items():
        model = _random(kw)
        save_model(model, tmp / name, {"kind": "test"})
        out[f"random:{name}"] = (model, tmp / name)
    return out


def _evaluate(models: dict, tmp, random_words: int) -> dict:
    jobs, expected = [], {}
    for i, (name, (model, d)) in enumerate(models.items()):
        words = _words(["a", "b"], i, random_words)
        (tmp / f"w{i}.json").write_text(json.dumps(words))
        jobs.append((str(d), str(tmp / f"w{i}.json"), str(tmp / f"o{i}.json")))
        expected[name] = (_original_logits(model, words), i)
    _isolated(jobs, tmp)
    return {name: (orig, [float.fromhex(x) for x in json.loads((tmp / f"o{i}.json").read_text())])
            for name, (orig, i) in expected.items()}


@pytest.fixture(scope="module")
def trained_runs(trained_models, tmp_path_factory):
    return _evaluate(trained_models, tmp_path_factory.mktemp("portable-trained-quick"), FAST_RANDOM_WORDS)


def _check(out: dict, name: str, random_words: int) -> None:
    orig, got = out[name]
    assert len(orig) == len(got) == 2 ** (ALL_UP_TO + 1) - 1 + random_words
    bad = [i for i, (a, b) in enumerate(zip(orig, got)) if a != b]
    assert not bad, f"{name}: {len(bad)} logits differ, first at word #{bad[0]}: {orig[bad[0]]} vs {got[bad[0]]}"


NAMES = [f"{s}:{e}" for s, encs in TRAINED.items() for e in encs] + [f"random:{n}" for n in RANDOM]


@pytest.mark.parametrize("name", NAMES)
def test_model_runs_without_langclass(trained_models, trained_runs, name):
    _check(trained_runs, name, FAST_RANDOM_WORDS)
    config = json.loads((trained_models[name][1] / "config.json").read_text())
    if name.startswith(("strict:", "causal:")):
        setting, encoding = name.split(":")
        assert config["provenance"]["encoding"] == encoding and config["provenance"]["route"] == "trained"
        assert config["readout"]["position"] == ("last" if setting == "causal" else "eos")
    if "learned" in name:
        enc = config["absolute_encoding"]
        assert enc["form"] == "learned_table" and enc["max_positions"] == ROWS and enc["tensor"] == "absolute_encoding.table"
    if "recency" in name:
        enc = config["encodings"][0]
        assert enc["kind"] == "rotary" and enc["family"] == "recency_periodic" and enc["periods"] and len(enc["slopes"]) == enc["n_heads"]
    if "hard" in name:
        assert all(layer["attention"]["score_grid"] in (1.0, 0.5) for layer in config["layers"])
    # a model a /1 reader runs correctly is written as /1; score_grid needs /2 (a /1 reader ignores it)
    assert config["format"] == ("langclass.portable/2" if "hard" in name else "langclass.portable/1")


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_full_size(trained_models, tmp_path):
    """Every model, every word to length 10 and 100 random words to 1,000."""
    out = _evaluate(trained_models, tmp_path, RANDOM_WORDS)
    for name in out:
        _check(out, name, RANDOM_WORDS)


def test_each_new_field_changes_the_function():
    """The runner uses what the new fields say: without the slopes, the learned rows or the grid the
    logits differ (so the equality above checks them), and a learned table refuses positions without a row."""
    words = _words(["a", "b"], 0, 1)[:2 ** 9 - 1]
    for name, drop in (("recency-periodic-three-of-four", lambda c, t: c["encodings"][0].pop("slopes")),
                       ("hard-grid-coarse-leftmost", lambda c, t: [layer["attention"].pop("score_grid") for layer in c["layers"]]),
                       ("learned-post-norm", lambda c, t: t["absolute_encoding.table"].zero_())):
        config, tensors = portable_parts(_random(RANDOM[name]))
        full = R.PortableTransformer(config, tensors).logits(words)
        drop(config, tensors)
        assert not torch.equal(R.PortableTransformer(config, tensors).logits(words), full), name
    config, tensors = portable_parts(_random(RANDOM["learned-post-norm"]))
    with pytest.raises(R.LimitError, match="learned table"):
        R.PortableTransformer(config, tensors).logits(["a" * ROWS])


def _tamper(d, edit) -> None:
    config = json.loads((d / "config.json").read_text())
    edit(config)
    (d / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("model,edit,kind,expect", [
    ("learned-post-norm", lambda c: c["absolute_encoding"].update(max_positions=ROWS + 1), "WeightsError", "absolute_encoding.table"),
    ("learned-post-norm", lambda c: c["absolute_encoding"].update(max_positions="1002"), "ConfigError", "max_positions"),
    ("learned-post-norm", lambda c: c["absolute_encoding"].update(tensor="embed.weight"), "ConfigError", "embed.weight"),
    ("learned-post-norm", lambda c: c["absolute_encoding"].update(form="exec"), "ConfigError", "form"),
    ("recency-periodic-three-of-four", lambda c: c["encodings"][0]["slopes"].pop(), "ConfigError", "slopes"),
    ("recency-periodic-three-of-four", lambda c: c["encodings"][0].update(n_heads=2, slopes=[1.0, 2.0]), "ConfigError",
     "one kernel per head"),
    ("recency-periodic-three-of-four", lambda c: c["encodings"][0]["slopes"].__setitem__(0, float("inf")), "ConfigError", "Infinity"),
    ("hard-grid-coarse-leftmost", lambda c: c["layers"][0]["attention"].update(score_grid=0), "ConfigError", "score_grid"),
    ("hard-grid-coarse-leftmost", lambda c: c["layers"][0]["attention"].update(score_grid="1"), "ConfigError", "score_grid"),
    ("hard-grid-coarse-leftmost", lambda c: c["layers"][0]["attention"].update(score_grid=2.0), "DigestError", "config"),
    ("hard-grid-coarse-leftmost", lambda c: c.update(format="langclass.portable/1"), "ConfigError", "needs format"),
    ("learned-post-norm", lambda c: c.update(format="langclass.portable/3"), "ConfigError", "format"),
])
def test_tampered_new_fields_are_refused(tmp_path, model, edit, kind, expect):
    save_model(_random(RANDOM[model]), tmp_path / "m", {"kind": "test"})
    _tamper(tmp_path / "m", edit)
    got, detail = _error_of(tmp_path / "m", verify_digests=kind == "DigestError")
    assert got == kind and expect in detail, detail


def test_state_prediction_heads_are_refused_by_name(tmp_path):
    from langclass.core.base.errors import InputError

    with pytest.raises(InputError, match="state-prediction") as err:
        save_model(Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, outputs=3)), tmp_path / "m")
    assert err.value.field == "model"
