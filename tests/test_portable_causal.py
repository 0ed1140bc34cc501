"""Portable C-RASP models (docs/models.md, docs/crasp.md "Construction"): the causal setting's
:class:`CountingTransformer` saved as ``langclass.portable/1`` (framing ``BOS w``, ``soft_uniform``
heads under a ``causal_nonstrict`` mask, ``pair_norm`` after each attention residual, readout at the
last position) and run by the standalone runner in a fresh isolated process without langclass, as
tests/test_portable.py: its logits must equal the original's bit for bit on every word to length 10
and on random words up to length 1,000 — for (ab|ba)* (program from its crasp certificate) and a
depth-3 program with constants (hand-written, three letters)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import torch

from langclass.models.construct.verify import run_construction
from langclass.models.nn.tokens import BOS, NUM_SPECIAL, PAD
from langclass.models.portable.export import RUNNER_NAME
from langclass.models.portable.provenance import construct_files

from _crasp_programs import ORACLES, constants_depth3
from test_portable import ALL_UP_TO, CHEAP, RANDOM_MAX, RANDOM_WORDS, _batches, _isolated, _words

FAST_RANDOM_WORDS = 3  # the quick test; test_causal_full_size (slow) uses RANDOM_WORDS = 100
FAST_ALL_UP_TO = {"ab_ba_star": ALL_UP_TO, "constants_depth3": 7}
"""Every word to these lengths in the quick test (3,280 words over three letters instead of 88,573); the slow
test_causal_full_size checks every word to length ALL_UP_TO = 10 for both."""



# name → (construction spec, reference decision of a word: tests/_crasp_programs.py's oracle)
PROGRAMS = {
    "ab_ba_star": ({"regex": "(ab|ba)*", "alphabet": ["a", "b"], "setting": "causal"}, ORACLES["ab_ba_star"][1]),
    "constants_depth3": ({"crasp_program": constants_depth3().to_json(), "setting": "causal"}, ORACLES["constants_depth3"][1]),
}


@torch.no_grad()
def _original_logits(model, words: list[str]) -> list[float]:
    """The CountingTransformer's logits: ``BOS w`` right-padded, read at each row's last index, in
    the batches the runner forms (the same length order and sizes)."""
    alphabet = list(model.plan.alphabet)
    out = [0.0] * len(words)
    for idx in _batches(words):
        T = max(len(words[i]) for i in idx) + 1
        ids = torch.full((len(idx), T), PAD, dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, :len(words[i]) + 1] = torch.tensor([BOS] + [NUM_SPECIAL + alphabet.index(a) for a in words[i]])
        valid = torch.arange(T)[None, :] <= torch.tensor([len(words[i]) for i in idx])[:, None]
        for i, v in zip(idx, model.decide(ids, valid, valid.sum(dim=1) - 1).double().tolist()):
            out[i] = v
    return out


def _build(spec: dict, **options) -> tuple:
    held: dict = {}
    record = run_construction({**spec, **CHEAP, **options}, on_model=lambda m, d: held.update(model=m, dfa=d))
    return held["model"], held["dfa"], record


@pytest.fixture(scope="module")
def causal_models(tmp_path_factory):
    """Each program's model built (through run_construction's ``on_model``) and saved once: ``{name: (model, dir, record)}``."""
    tmp = tmp_path_factory.mktemp("causal-models")
    out = {}
    for name, (spec, _) in PROGRAMS.items():
        model, dfa, record = _build(spec)
        d = tmp / name
        d.mkdir()
        for fname, data in construct_files(model, dfa, record).items():
            (d / fname).write_bytes(data)
        out[name] = (model, d, record)
    return out


def _evaluate(models: dict, tmp: Path, random_words: int, quick: bool = False) -> dict:
    """``{name: (original logits, runner logits from the isolated process, words)}``: every word to length
    10 (``quick``: to FAST_ALL_UP_TO) and ``random_words`` random words up to 1,000, the last exactly 1,000."""
    jobs, expected = [], {}
    for i, (name, (model, d, _)) in enumerate(models.items()):
        k = len(model.plan.alphabet)
        words = _words(list(model.plan.alphabet), i, random_words)
        if quick:
            n = sum(k ** m for m in range(FAST_ALL_UP_TO[name] + 1))
            words = words[:n] + words[sum(k ** m for m in range(ALL_UP_TO + 1)):]
        (tmp / f"w{i}.json").write_text(json.dumps(words))
        jobs.append((str(d), str(tmp / f"w{i}.json"), str(tmp / f"o{i}.json")))
        expected[name] = (_original_logits(model, words), i, words)
    _isolated(jobs, tmp)
    return {name: (orig, [float.fromhex(x) for x in json.loads((tmp / f"o{i}.json").read_text())], words)
            for name, (orig, i, words) in expected.items()}


def _check(out: dict, name: str, random_words: int, all_up_to: int = ALL_UP_TO) -> None:
    orig, got, words = out[name]
    k = 3 if name == "constants_depth3" else 2
    assert len(orig) == len(got) == sum(k ** n for n in range(all_up_to + 1)) + random_words
    assert max(len(w) for w in words) == RANDOM_MAX
    bad = [i for i, (a, b) in enumerate(zip(orig, got)) if a != b]
    assert not bad, f"{name}: {len(bad)} logits differ, first at word #{bad[0]} ({words[bad[0]][:20]!r}): {orig[bad[0]]} vs {got[bad[0]]}"
    # the model is exact (lengths ≤ 1,000 < the float32 certified length): the language's decisions
    assert [v > 0 for v in got] == [PROGRAMS[name][1](w) for w in words]


@pytest.fixture(scope="module")
def causal_runs(causal_models, tmp_path_factory):
    return _evaluate(causal_models, tmp_path_factory.mktemp("causal-quick"), FAST_RANDOM_WORDS, quick=True)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_causal_model_runs_without_langclass(causal_models, causal_runs, name):
    _check(causal_runs, name, FAST_RANDOM_WORDS, FAST_ALL_UP_TO[name])
    _, d, record = causal_models[name]
    assert record["setting"] == "causal" and record["exact"] and record["n_max"] > RANDOM_MAX
    assert (d / RUNNER_NAME).exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_causal_full_size(causal_models, tmp_path):
    """The criterion at full size: every word to length 10 and 100 random words up to 1,000."""
    out = _evaluate(causal_models, tmp_path, RANDOM_WORDS)
    for name in PROGRAMS:
        _check(out, name, RANDOM_WORDS)


def test_config_states_the_counting_model(causal_models):
    """Framing, heads, pair_norm (coordinates and epsilon), readout and provenance as docs/models.md says."""
    model, d, record = causal_models["constants_depth3"]
    config = json.loads((d / "config.json").read_text())
    plan = model.plan
    assert config["vocabulary"] == {"letters": ["a", "b", "c"], "framing": "bos_word", "pad": 0, "bos": 1, "eos": None,
                                    "first_letter": 3}
    assert config["readout"]["position"] == "last" and config["readout"]["empty_word"] is None
    assert config["norm"] == "none" and config["encodings"] == [] and config["absolute_encoding"] is None
    assert len(config["layers"]) == len(plan.layers)
    tiny = torch.finfo(torch.float32).tiny
    for layer, planned in zip(config["layers"], plan.layers):
        if not planned.channels:
            assert layer["attention"] is None and layer["pair_norm"] is None
            continue
        (head,) = layer["attention"]["heads"]
        assert (head["attention"], head["mask"], head["d_qk"], head["d_v"]) == ("soft_uniform", "causal_nonstrict", 0,
                                                                                len(planned.channels))
        assert layer["pair_norm"]["coords"] == [ch.coord for ch in planned.channels]
        assert layer["pair_norm"]["epsilon"] == tiny and layer["pair_norm"]["op"] == "layer_norm_pairs"
    assert sum(1 for layer in config["layers"] if layer["attention"]) == record["crasp"]["depth"] == 3
    # the zero query/key projections are not written: 2·m·(d_model + 1) numbers fewer per attention layer
    dropped = sum(2 * len(la.channels) * (plan.d_model + 1) for la in plan.layers if la.channels)
    assert config["parameters"] == record["model"]["parameters"] - dropped
    prov = config["provenance"]
    assert prov["class"] == "C-RASP" and prov["route"] == "crasp" and prov["mask"] == "nonstrict"
    assert "Counting Like Transformers" in prov["theorem"] and "Out" in prov["program"]
    assert prov["language"] is None and prov["model_class"] == "CountingTransformer"
    assert prov["verification"]["exact"] and prov["verification"]["n_max"] == record["n_max"]


@pytest.mark.parametrize("dtype", ["float64", "bfloat16", "float16"])
def test_every_dtype_runs_bit_for_bit(dtype, tmp_path):
    """The uniform weights 1/n are rounded once, as softmax rounds them, in every format (in process)."""
    from langclass.models.portable.load import load_model

    model, dfa, record = _build(PROGRAMS["ab_ba_star"][0], dtype=dtype)
    for fname, data in construct_files(model, dfa, record).items():
        (tmp_path / fname).write_bytes(data)
    loaded = load_model(tmp_path)
    assert loaded.config["dtype"] == dtype
    words = _words(["a", "b"], 3, 1)[2 ** 9 - 1:-1] + ["ab" * 150, "a" * 200 + "b" * 100]  # lengths 9, 10 and 300
    # (past bfloat16's certified length 9: equal logits, right or wrong)
    assert loaded.logits(words).tolist() == _original_logits(model, words)


def test_pair_norm_is_what_makes_the_signs_exact(causal_models, tmp_path):
    """Dropping the pair normalizations from the config (digests skipped) changes the logits: the
    runner applies the op and the export does not make it redundant."""
    from langclass.models.portable.runner import load

    _, d, _ = causal_models["ab_ba_star"]
    for name in ("model.safetensors", RUNNER_NAME):
        (tmp_path / name).write_bytes((d / name).read_bytes())
    config = json.loads((d / "config.json").read_text())
    for layer in config["layers"]:
        layer["pair_norm"] = None
    (tmp_path / "config.json").write_text(json.dumps(config))
    words = _words(["a", "b"], 0, 1)[:200]
    assert load(str(tmp_path), verify_digests=False).logits(words).tolist() != load(str(d)).logits(words).tolist()


@pytest.mark.parametrize("edit,expect", [
    (lambda c: c["vocabulary"].update(bos=None), "vocabulary.bos"),
    (lambda c: _attn_layer(c)["pair_norm"].update(coords=[0, 1]), "pair_norm"),
    (lambda c: _attn_layer(c)["pair_norm"].update(coords=[10 ** 6]), "pair_norm"),
    (lambda c: _attn_layer(c)["pair_norm"].update(coords=[]), "pair_norm"),
    (lambda c: _attn_layer(c)["pair_norm"].update(epsilon=-1.0), "pair_norm.epsilon"),
    (lambda c: _attn_layer(c)["pair_norm"].pop("epsilon"), "pair_norm.epsilon"),
    (lambda c: next(la for la in c["layers"] if not la["attention"]).update(pair_norm={"coords": [0], "epsilon": 0.0}),
     "pair_norm"),
    (lambda c: c.update(norm="pre", layer_norm_eps=1e-5), "pair_norm"),
    (lambda c: c["readout"].update(position="eos"), "readout.position"),
])
def test_malformed_causal_config_is_refused_naming_the_field(causal_models, tmp_path, edit, expect):
    from langclass.models.portable.runner import ConfigError, load

    _, d, _ = causal_models["ab_ba_star"]
    (tmp_path / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes())
    config = json.loads((d / "config.json").read_text())
    edit(config)
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=expect.replace(".", r"\.")):
        load(str(tmp_path), verify_digests=False)


def _attn_layer(config: dict) -> dict:
    return next(layer for layer in config["layers"] if layer["attention"])


def test_a_head_with_nonzero_queries_is_not_exported_as_uniform(causal_models):
    from langclass.core.base.errors import InputError
    from langclass.models.portable.export import portable_parts

    model, _, _ = _build(PROGRAMS["ab_ba_star"][0])
    attn = next(a for a, has in zip(model.attn, model.has_attention) if has)
    with torch.no_grad():
        attn.k_proj.bias[0] = 1e-3
    with pytest.raises(InputError, match="uniform soft head"):
        portable_parts(model)


def test_python_return_model_and_load_model_round_trip(tmp_path):
    import langclass

    r = langclass.construct("(ab|ba)*", alphabet="ab", setting="causal", return_model=True, **CHEAP)
    assert type(r.model).__name__ == "CountingTransformer" and r.record["setting"] == "causal"
    assert r.save_model(str(tmp_path)) == [str(tmp_path)]
    loaded = langclass.load_model(str(tmp_path))
    words = _words(["a", "b"], 5, 2)[: 2 ** 8 - 1] + ["ab" * 400, "ba" * 399 + "aa"]
    assert loaded.logits(words).tolist() == _original_logits(r.model, words)
    assert loaded.classify(["", "ab", "ba", "abba", "aabb", "a"]) == [True, True, True, True, False, False]
    assert loaded.config["provenance"]["verification"]["all_words_up_to"] == CHEAP["all_words_up_to"]


def test_cli_construct_causal_save_writes_a_loadable_model(tmp_path):
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.models.portable.load import load_model

    out = CliRunner().invoke(app, ["construct", "-r", "(ab|ba)*", "-a", "ab", "--setting", "causal", "--all-words", "5",
                                   "--random-words", "2", "--random-max-length", "30", "--save", str(tmp_path / "m"), "--json"])
    assert out.exit_code == 0, out.output
    record = json.loads(out.stdout)
    assert record["setting"] == "causal" and record["saved"]["files"] == ["config.json", RUNNER_NAME, "model.safetensors"]
    model = load_model(tmp_path / "m")
    words = ["", "ab", "ba", "abba", "baab", "aabb", "a", "bab"]
    assert model.classify(words) == [PROGRAMS["ab_ba_star"][1](w) for w in words]
    prov = model.config["provenance"]
    assert prov["class"] == "C-RASP" and prov["verification"]["all_words_up_to"] == 5


def test_construct_job_stores_the_causal_model():
    """The API's construct job (langclass.app.usecases.model_jobs) zips the causal model for ``GET /v1/jobs/{id}/model``."""
    from langclass.app.usecases.model_jobs import run_construct_job
    from langclass.models.portable.runner import PortableTransformer
    from safetensors.torch import load as st_load

    out = run_construct_job({**PROGRAMS["ab_ba_star"][0], **CHEAP})
    summary = out["portable_model"]["models"]["model"]
    assert summary["attention"] == ["soft_uniform"] and summary["masks"] == ["causal_nonstrict"] and summary["route"] == "crasp"
    with zipfile.ZipFile(io.BytesIO(out.model_zip)) as zf:
        assert sorted(zf.namelist()) == ["config.json", RUNNER_NAME, "model.safetensors"]
        config = json.loads(zf.read("config.json"))
        tensors = st_load(zf.read("model.safetensors"))
    model = PortableTransformer(config, tensors)
    assert model.classify(["", "ab", "ba", "abba", "aabb"]) == [True, True, True, True, False]
    assert config["provenance"]["language"]["id"] == out["language"]["fingerprint"]
