"""Portable models (docs/models.md): every construction route and a trained model of every encoding,
saved, then run by the standalone runner in a fresh process where ``import langclass`` is impossible;
its logits must equal the original model's bit for bit on every word to length 10 and on 100 random
words up to length 1,000.

The isolated process runs ``python -I -S`` (no PYTHONPATH, no site: the editable install's path hook
is never read) with only the directories of torch and safetensors on ``sys.path``, asserts that
``langclass`` cannot be found, imports ``langclass_runner.py`` from the model's folder and prints the
logits as float hex. All models are evaluated by one such process (one torch start-up)."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from langclass.core.ingest.regex import regex_to_dfa
from langclass.models.construct.verify import run_construction
from langclass.models.experiments.experiment import run_experiment
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.nn.tokens import Vocabulary
from langclass.models.portable.export import RUNNER_NAME
from langclass.models.portable.provenance import BestRuns, construct_files

ALL_UP_TO = 10
RANDOM_WORDS = 100
FAST_RANDOM_WORDS = 1  # the quick tests: the one word of length RANDOM_MAX; test_full_size (slow) uses RANDOM_WORDS
RANDOM_MAX = 1000
CHEAP = {"all_words_up_to": 4, "random_words": 2, "random_max_length": 30}

# route → (construction spec, what the record must say)
ROUTES = {
    "soft-formula-nope": ({"regex": "(a|b)*a(a|b)*", "alphabet": ["a", "b"]}, {"attention": "soft", "encoding": "nope"}),
    "periodic-rope": ({"regex": "((a|b)(a|b))*", "alphabet": ["a", "b"]}, {"attention": "soft", "encoding": "rope_periodic"}),
    "recency-heads": ({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "y_mode": "recency"}, {"attention": "soft"}),
    "rope-y-heads": ({"regex": "(a|b)*ab", "alphabet": ["a", "b"], "y_mode": "rope", "target_length": 1100},
                     {"attention": "soft", "encoding": "rope"}),
    "cascade": ({"regex": "(ab)*", "alphabet": ["a", "b"], "route": "cascade"}, {"attention": "hard"}),
    "local-divisors": ({"regex": "(ab)*", "alphabet": ["a", "b"], "route": "local-divisors"}, {"attention": "hard"}),
    "nonstrict-mask": ({"regex": "(a|b)*ab(a|b)*", "alphabet": ["a", "b"], "mask": "nonstrict"}, {"attention": "hard", "mask": "nonstrict"}),
    "fo-mod-marks": ({"regex": "((a|b)(a|b))*a", "alphabet": ["a", "b"], "attention": "hard"},
                     {"attention": "hard", "encoding": "mod_onehot"}),
}
ENCODINGS = {
    "nope": {},
    "sinusoidal": {},
    "sinusoidal_periodic": {"periods": 2},
    "rope": {},
    "rope_periodic": {"periods": 2},
    "alibi": {},
    "mod_onehot": {"period": 2},
    "pj_bias": {"n_freqs": 1},
    "pj_rotary": {},
}
VARIANTS = {  # Recognizer options the experiment grid does not use (random weights, no training)
    "post-norm-hard-nonstrict": dict(norm="post", attention="hard", tie="leftmost", mask="nonstrict"),
    "no-norm-log-scale-float64": dict(norm="none", length_scale="log", dtype="float64", encoding={"name": "rope", "rotary_dim": 4}),
    "pj-bias-per-layer-gelu": dict(activation="gelu", mask="none", encoding={"name": "pj_bias", "layers": 2}),
    "pj-rotary-roots": dict(encoding={"name": "pj_rotary", "order": 2, "roots": [[1, 3], [1, 4]]}, d_model=16, n_heads=2),
    # the causal training setting (docs/training.md): non-strict mask, BOS w without EOS, readout at the last position
    "causal-rope-readout-last": dict(mask="nonstrict", readout="last", encoding={"name": "rope"}),
    "causal-alibi-readout-last": dict(mask="nonstrict", readout="last", encoding={"name": "alibi"}),
}


def _words(alphabet: list[str], seed: int, random_words: int) -> list[str]:
    """Every word to length ALL_UP_TO, then ``random_words`` random words of lengths up to RANDOM_MAX (the last exactly RANDOM_MAX)."""
    out = ["".join(w) for n in range(ALL_UP_TO + 1) for w in itertools.product(alphabet, repeat=n)]
    rng = random.Random(seed)
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(ALL_UP_TO + 1, RANDOM_MAX))) for _ in range(random_words - 1)]
    return out + ["".join(rng.choice(alphabet) for _ in range(RANDOM_MAX))]


def _batches(words: list[str], tokens: int = 2 ** 22):
    """Index chunks of similar lengths with at most ``tokens`` score entries per head."""
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    i = 0
    while i < len(order):
        T = len(words[order[min(len(order) - 1, i + 63)]]) + 2
        n = max(1, min(64, tokens // (T * T)))
        yield order[i:i + n]
        i += n


@torch.no_grad()
def _original_logits(model, words: list[str]) -> list[float]:
    """The original model's accept logits, batched as the model itself expects."""
    out = [0.0] * len(words)
    kind = type(model).__name__
    alphabet = list(model.config.alphabet if kind == "Recognizer" else model.alphabet if kind == "FormulaTransformer"
                    else model.program.alphabet)
    vocab = Vocabulary(tuple(alphabet))
    for idx in _batches(words):
        chunk = [words[i] for i in idx]
        if kind == "BraspTransformer":  # no padding: one length at a time; the empty word by declaration
            for n in sorted({len(w) for w in chunk}):
                sel = [i for i in idx if len(words[i]) == n]
                if n == 0:
                    vals = [1.0 if model.program.empty_accept else -1.0] * len(sel)
                else:
                    ids = torch.tensor([[alphabet.index(a) for a in words[i]] for i in sel])
                    vals = model.decide(ids).double().tolist()
                for i, v in zip(sel, vals):
                    out[i] = v
            continue
        b = vocab.batch(chunk, eos=getattr(getattr(model, "config", None), "readout", "eos") == "eos")
        logits = model.decide(b.ids, b.valid, b.eos_index) if kind == "FormulaTransformer" else model.forward_batch(b)
        for i, v in zip(idx, logits.double().tolist()):
            out[i] = v
    return out


DRIVER = r'''
import importlib.util, json, sys
jobs, site = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.path[:0] = site
assert importlib.util.find_spec("langclass") is None, "langclass is importable in the isolated process"
for model_dir, words_file, out_file in jobs:
    sys.path.insert(0, model_dir)
    sys.modules.pop("langclass_runner", None)
    import langclass_runner
    sys.path.remove(model_dir)
    model = langclass_runner.load(model_dir)
    words = json.load(open(words_file))
    logits = model.logits(words)
    json.dump([float(x).hex() for x in logits.tolist()], open(out_file, "w"))
assert "langclass" not in sys.modules and not any(m.startswith("langclass.") for m in sys.modules)
print("ok", len(jobs))
'''


def _isolated(jobs: list[tuple[str, str, str]], tmp: Path) -> None:
    import safetensors

    site = sorted({str(Path(torch.__file__).parents[1]), str(Path(safetensors.__file__).parents[1])})
    driver = tmp / "driver.py"
    driver.write_text(DRIVER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run([sys.executable, "-I", "-S", str(driver), json.dumps(jobs), json.dumps(site)], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _tiny_experiment(dfa, encodings: dict) -> dict:
    spec = {"language": dfa.to_canonical_dict(), "profile": "quick",
            "encodings": [{"name": n, "params": p, "label": n} for n, p in encodings.items()],
            "overrides": {"max_steps": 3, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "batch_size": 8,
                          "train_lengths": {"range": [1, 6]}, "test_lengths": {"lengths": [7]}, "eval_per_length": 4}}
    return spec


@pytest.fixture(scope="module")
def portable_models(tmp_path_factory):
    """Every model built and saved once: ``{name: (model, saved dir, record)}`` — the construction routes
    (through run_construction's ``on_model``), one trained run per encoding (through run_experiment's
    ``on_model`` and :class:`BestRuns`) and the Recognizer variants (save_model)."""
    from langclass.models.portable.export import save_model

    tmp = tmp_path_factory.mktemp("portable-models")
    built: dict[str, tuple] = {}
    for name, (spec, _) in ROUTES.items():
        held = {}
        record = run_construction({**spec, **CHEAP}, on_model=lambda m, d: held.update(model=m, dfa=d))
        built[f"construct:{name}"] = (held["model"], construct_files(held["model"], held["dfa"], record), record)
    dfa = regex_to_dfa("((a|b)(a|b))*", ["a", "b"])
    kept: dict[str, tuple] = {}
    best = BestRuns(dfa, all_runs=True)

    def on_model(run, model):
        best.on_model(run, model)
        kept[run["encoding"]] = (model, run)

    result = run_experiment(_tiny_experiment(dfa, ENCODINGS), on_model=on_model, batched=False)
    assert {r["encoding"] for r in result["runs"]} == set(ENCODINGS)
    by_label = {info["encoding"]: folder for folder, info in best.runs().items()}
    for label, (model, run) in kept.items():
        built[f"train:{label}"] = (model, best.folders()[by_label[label]], run)
    for name, kw in VARIANTS.items():
        torch.manual_seed(1)
        cfg = RecognizerConfig(alphabet=("a", "b"), **{"d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, **kw})
        built[f"variant:{name}"] = (Recognizer(cfg).eval(), None, None)
    models = {}
    for i, (name, (model, files, record)) in enumerate(built.items()):
        d = tmp / f"m{i}"
        if files is None:
            save_model(model, d, {"kind": "test"})
        else:
            d.mkdir()
            for fname, data in files.items():
                (d / fname).write_bytes(data)
        models[name] = (model, d, record)
    return models


def _evaluate_all(models: dict, tmp: Path, random_words: int) -> dict:
    """Original and runner logits of every model on every word to length 10 and ``random_words``
    random words up to length 1,000 (the last exactly 1,000): ``{name: (original, runner, dir, record)}``."""
    jobs, expected = [], {}
    for i, (name, (model, d, _)) in enumerate(models.items()):
        words = _words(["a", "b"], i, random_words)
        (tmp / f"w{i}.json").write_text(json.dumps(words))
        jobs.append((str(d), str(tmp / f"w{i}.json"), str(tmp / f"o{i}.json")))
        expected[name] = (_original_logits(model, words), i, d)
    _isolated(jobs, tmp)
    out = {}
    for name, (orig, i, d) in expected.items():
        got = [float.fromhex(x) for x in json.loads((tmp / f"o{i}.json").read_text())]
        out[name] = (orig, got, d, models[name][2])
    return out


@pytest.fixture(scope="module")
def portable_runs(portable_models, tmp_path_factory):
    """The quick comparison: every word to length 10 and FAST_RANDOM_WORDS random words to 1,000."""
    return _evaluate_all(portable_models, tmp_path_factory.mktemp("portable-quick"), FAST_RANDOM_WORDS)


def _check(out, name, random_words: int = FAST_RANDOM_WORDS):
    orig, got, d, _ = out[name]
    assert len(orig) == len(got) == 2 ** (ALL_UP_TO + 1) - 1 + random_words
    bad = [i for i, (a, b) in enumerate(zip(orig, got)) if a != b]
    assert not bad, f"{name}: {len(bad)} logits differ, first at word #{bad[0]}: {orig[bad[0]]} vs {got[bad[0]]}"
    assert (d / RUNNER_NAME).exists()


@pytest.mark.parametrize("route", list(ROUTES))
def test_construction_route_runs_without_langclass(portable_runs, route):
    _check(portable_runs, f"construct:{route}")
    orig, _, d, record = portable_runs[f"construct:{route}"]
    for key, value in ROUTES[route][1].items():
        assert record[key] == value
    assert record["exact"]
    config = json.loads((d / "config.json").read_text())
    prov = config["provenance"]
    assert prov["language"]["id"] == record["language"]["fingerprint"]
    assert prov["verification"]["all_words_up_to"] == CHEAP["all_words_up_to"] and prov["theorem"]
    assert prov["route"] == record["route"]["route"]
    # the decisions are the language's: the model is exact, so the runner classifies like the DFA
    dfa = regex_to_dfa(ROUTES[route][0]["regex"], ["a", "b"])
    words = _words(["a", "b"], 0, 1)[: 2 ** 9 - 1]
    assert [v > 0 for v in orig[: len(words)]] == [dfa.accepts(list(w)) for w in words]


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_trained_model_runs_without_langclass(portable_runs, encoding):
    _check(portable_runs, f"train:{encoding}")
    d = portable_runs[f"train:{encoding}"][2]
    config = json.loads((d / "config.json").read_text())
    assert config["provenance"]["encoding"] == encoding and config["provenance"]["route"] == "trained"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_recognizer_variants_run_without_langclass(portable_runs, variant):
    _check(portable_runs, f"variant:{variant}")


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_full_size(portable_models, tmp_path):
    """The issue's criterion at full size: every model, every word to length 10 and 100 random words to 1,000."""
    out = _evaluate_all(portable_models, tmp_path, RANDOM_WORDS)
    for name in out:
        _check(out, name, RANDOM_WORDS)


# ------------------------------------------------------------------------------------ refusals
@pytest.fixture()
def saved(tmp_path):
    """A small saved construction (Tomita 1, (ab)*, cascade) in ``tmp_path / "m"``."""
    import langclass

    r = langclass.construct("(ab)*", alphabet="ab", route="cascade", return_model=True, **CHEAP)
    r.save_model(str(tmp_path / "m"))
    return tmp_path / "m"


def _first(config, part):
    return next(layer[part] for layer in config["layers"] if layer[part])


def _error_of(directory, **kw):
    from langclass.core.base.errors import ModelFileError
    from langclass.models.portable.load import load_model

    with pytest.raises(ModelFileError) as info:
        load_model(directory, **kw)
    return info.value.extra["error"], info.value.detail


def test_saved_model_loads_and_classifies_like_the_language(saved):
    import langclass

    model = langclass.load_model(str(saved))
    assert isinstance(model, torch.nn.Module)
    words = ["", "ab", "abab", "aba", "ba", "abba"]
    assert model.classify(words) == [True, True, True, False, False, False]
    assert model.config["provenance"]["route"] == "cascade" and model.config["provenance"]["class"] == "star-free"
    assert model.config["provenance"]["language"]["canonical_dfa"]["alphabet"] == ["a", "b"]
    # the shipped runner as a script, in a fresh interpreter
    proc = subprocess.run([sys.executable, str(saved / RUNNER_NAME), str(saved), "ab", "aba"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [line.split("\t")[-1] for line in proc.stdout.splitlines()] == ["accept", "reject"]


def test_tampered_config_is_refused_by_digest(saved):
    config = json.loads((saved / "config.json").read_text())
    config["readout"]["threshold"] = -5.0  # a valid config, but not the one saved with these weights
    (saved / "config.json").write_text(json.dumps(config))
    kind, detail = _error_of(saved)
    assert kind == "DigestError" and "config" in detail


def test_tampered_weights_are_refused_by_digest(saved):
    data = bytearray((saved / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (saved / "model.safetensors").write_bytes(bytes(data))
    assert _error_of(saved)[0] == "DigestError"


@pytest.mark.parametrize("cut", [1, 100, 10_000])
def test_truncated_weights_are_refused(saved, cut):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(data[:max(0, len(data) - cut)])
    kind, detail = _error_of(saved)
    assert kind == "WeightsError" and "truncated" in detail


@pytest.mark.parametrize("edit,expect", [
    (lambda c: c.update(format="other/1"), "config.format"),
    (lambda c: _first(c, "attention")["heads"][0].update(mask="sideways"), "mask"),
    (lambda c: _first(c, "attention")["heads"][0].update(attention="exec"), "attention"),
    (lambda c: c.update(d_model="12"), "d_model"),
    (lambda c: c["vocabulary"].update(letters=["a", "a"]), "letters"),
    (lambda c: c["readout"].update(threshold=float("nan")), "NaN"),
])
def test_malformed_config_is_refused_naming_the_field(saved, edit, expect):
    config = json.loads((saved / "config.json").read_text())
    edit(config)
    (saved / "config.json").write_text(json.dumps(config))  # json.dumps writes NaN, which the loader refuses
    kind, detail = _error_of(saved, verify_digests=False)
    assert kind == "ConfigError" and expect in detail


def test_shape_mismatch_and_parameter_budget_are_refused(saved):
    config = json.loads((saved / "config.json").read_text())
    l = next(i for i, layer in enumerate(config["layers"]) if layer["ffn"])
    config["layers"][l]["ffn"]["d_ff"] += 1
    (saved / "config.json").write_text(json.dumps(config))
    kind, detail = _error_of(saved, verify_digests=False)
    assert kind == "WeightsError" and f"layers.{l}.ffn.fc1.weight" in detail
    config["layers"][l]["ffn"]["d_ff"] = 10 ** 7  # a config claiming a huge model: refused before reading weights
    (saved / "config.json").write_text(json.dumps(config))
    assert _error_of(saved, verify_digests=False, max_parameters=10 ** 6)[0] == "LimitError"


def test_a_pickle_posing_as_weights_is_never_executed(saved, tmp_path):
    import pickle

    marker = tmp_path / "executed"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (saved / "model.safetensors").write_bytes(pickle.dumps(Boom()))
    assert _error_of(saved)[0] == "WeightsError"
    assert not marker.exists()


def test_lag_table_bounds_the_input_length(tmp_path):
    from langclass.models.portable.export import save_model
    from langclass.models.portable.runner import LimitError, load

    torch.manual_seed(0)
    model = Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=8, n_heads=2, n_layers=1, encoding={"name": "pj_bias"}))
    save_model(model, tmp_path, n_lags=12)
    runner = load(str(tmp_path))
    words = ["ab" * 5, "a"]
    assert runner.logits(words).tolist() == model.logits_for(words).double().tolist()
    with pytest.raises(LimitError, match="at most 12 tokens"):
        runner.logits(["a" * 11])


def test_soft_uniform_heads_average_the_visible_values(saved):
    """The ``soft_uniform`` kind (counting attention, as C-RASP models use) equals soft attention with
    all-zero scores: the same model with zero query weights under ``soft`` gives the same logits."""
    from langclass.models.portable.runner import PortableTransformer, load

    base = load(str(saved))
    config = json.loads((saved / "config.json").read_text())
    tensors = {k.replace("/", "."): p.detach().clone() for k, p in base.params.items()}
    for layer in config["layers"]:
        if layer["attention"]:
            for h in layer["attention"]["heads"]:
                h.update(attention="soft", mask="causal_nonstrict", tie=None)
    for name in tensors:
        if ".attn.q." in name:
            tensors[name].zero_()
    soft = PortableTransformer(config, tensors)
    for layer in config["layers"]:
        if layer["attention"]:
            for h in layer["attention"]["heads"]:
                h["attention"] = "soft_uniform"
    uniform = PortableTransformer(config, tensors)
    words = _words(["a", "b"], 0, 1)[:200]
    assert torch.allclose(soft.logits(words), uniform.logits(words), atol=1e-5)


def test_docs_models_md_examples_run():
    import doctest

    torch.set_num_threads(1)
    failed, attempted = doctest.testfile(str(Path(__file__).resolve().parents[1] / "docs" / "models.md"), module_relative=False,
                                         optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert attempted >= 8 and failed == 0


def test_cli_construct_save_writes_a_loadable_model(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.models.portable.load import load_model

    out = CliRunner().invoke(app, ["construct", "-r", "(ab)*", "-a", "ab", "--all-words", "5", "--random-words", "2",
                                   "--random-max-length", "30", "--save", str(tmp_path / "t1"), "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.stdout)
    assert record["saved"]["files"] == ["config.json", RUNNER_NAME, "model.safetensors"]
    model = load_model(tmp_path / "t1")
    assert model.classify(["", "ab", "aab"]) == [True, True, False]
    assert model.config["provenance"]["verification"]["all_words_up_to"] == 5


@pytest.mark.slow
def test_cli_train_save_folder_keeps_every_run_or_the_best(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.models.portable.load import load_model

    tiny = ["--max-steps", "5", "--test-lengths", "11,12", "--eval-per-length", "8", "--seed", "0", "--seed", "1",
            "--set", "train_lengths=[1,10]", "--set", "d_model=8", "--set", "n_heads=2", "--set", "d_ff=16", "--set", "n_layers=1"]
    out = CliRunner().invoke(app, ["train", "-r", "(ab)*", "-a", "ab", "-e", "nope", *tiny, "--save", str(tmp_path / "best")])
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in (tmp_path / "best").iterdir()) == ["enc-nope", RUNNER_NAME, "result.json"]
    runs = json.loads((tmp_path / "best" / "result.json").read_text())["runs"]
    best = max(runs, key=lambda r: (r["longest_perfect_length"], r["accuracy"], -r["seed"]))
    assert load_model(tmp_path / "best" / "enc-nope").config["provenance"]["seed"] == best["seed"]
    out = CliRunner().invoke(app, ["train", "-r", "(ab)*", "-a", "ab", "-e", "nope", *tiny, "--save", str(tmp_path / "all"),
                                   "--save-all-runs"])
    assert out.exit_code == 0, out.output
    folders = sorted(p.name for p in (tmp_path / "all").iterdir() if p.is_dir())
    assert len(folders) == 2 and all(f.startswith("run000") for f in folders)


def test_hostile_json_and_tensor_dtypes_are_refused(saved):
    from safetensors.torch import load_file, save_file

    good = (saved / "config.json").read_text()
    (saved / "config.json").write_text("[" * 200_000 + "]" * 200_000)
    assert _error_of(saved)[0] == "ConfigError"
    (saved / "config.json").write_text(good)
    tensors = load_file(str(saved / "model.safetensors"))
    tensors["embed.weight"] = tensors["embed.weight"].to(torch.int32)  # not a float dtype the format allows
    save_file(tensors, str(saved / "model.safetensors"))
    kind, detail = _error_of(saved, verify_digests=False)
    assert kind == "WeightsError" and "embed.weight" in detail
