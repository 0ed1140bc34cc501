"""TransformerLens export (docs/models.md, "TransformerLens export"): the exported HookedTransformer
gives the same decisions as the original (logits within float reassociation) on every word to
length 8 and random longer words, for every representable family; every refusal names its reason."""

from __future__ import annotations

import json

import pytest
import torch

from langclass.core.base.errors import InputError, LimitExceeded, UnsupportedError
from langclass.models.nn.recognizer import Recognizer, RecognizerConfig
from langclass.models.portable import tlens
from langclass.models.portable.export import save_model
from langclass.models.portable.load import load_model

TOL = {"float32": 1e-5, "float64": 1e-12}


@pytest.fixture
def tl():
    """transformer_lens (the ``interop`` extra: ``make test-slow`` installs it, and the tests that use
    it are in the slow tier, so CI runs them; docs/models.md); the refusal tests need no fixture,
    since refusals are decided before TransformerLens is imported."""
    return pytest.importorskip("transformer_lens")


def _rec(seed: int = 0, **kw) -> Recognizer:
    torch.manual_seed(seed)
    kw.setdefault("mask", "nonstrict")
    return Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, **kw)).eval()


EXACT = {  # the causal setting's families (learned/absolute positions, rotary, ALiBi, NoPE), both norms
    "nope-pre": dict(encoding={"name": "nope"}),
    "sinusoidal-no-norm": dict(norm="none", encoding={"name": "sinusoidal"}),
    "rope-half-split": dict(encoding={"name": "rope"}),
    "rope-interleaved-partial-gelu-float64": dict(activation="gelu", dtype="float64",
                                                  encoding={"name": "rope", "pair_layout": "interleaved", "rotary_dim": 4}),
    "alibi": dict(encoding={"name": "alibi"}),
    "bidirectional-nope": dict(mask="none", encoding={"name": "nope"}),
    "learned-causal": dict(readout="last", encoding={"name": "learned", "max_positions": 80}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXACT))
def test_export_matches_on_every_word(name, tl):
    model = _rec(**EXACT[name])
    ht = tlens.to_hooked_transformer(model, n_ctx=80)
    check = tlens.check_export(model, ht, max_length=8, random_words=10, random_max_length=70, seed=1)
    assert check["words_checked"] == 2 ** 9 - 1 + 10
    assert check["decisions_equal"], check["disagreements"]
    assert check["max_abs_diff"] <= TOL[model.config.dtype]
    # the hooks are TL's: the attention pattern is causal (j <= i) unless the model is unmasked
    _, cache = ht.run_with_cache(torch.tensor([[1, 3, 4, 4, 2]]))
    pattern = cache["blocks.0.attn.hook_pattern"][0]
    upper = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    assert bool((pattern[:, upper] == 0).all()) == (name != "bidirectional-nope")


@pytest.mark.slow
def test_causal_setting_framing_bos_word_readout_last(tl):
    """The causal setting's portable form (``BOS w``, no EOS, readout at the last position, as the
    causal training setting exports it): the empty word is BOS alone, read at BOS."""
    from langclass.models.portable.export import portable_parts
    from langclass.models.portable.runner import PortableTransformer

    config, tensors = portable_parts(_rec(3, encoding={"name": "rope"}))
    config["vocabulary"].update(framing="bos_word", eos=None)
    config["readout"].update(position="last")
    model = PortableTransformer(config, tensors)
    ht = tlens.to_hooked_transformer(model, n_ctx=72)
    check = tlens.check_export(model, ht, max_length=8, random_words=5, random_max_length=70, seed=2)
    assert check["decisions_equal"] and check["max_abs_diff"] <= TOL["float32"]
    assert model.encode([""])[0].tolist() == [[1]]


@pytest.mark.slow
def test_saved_folder_round_trip(tmp_path, tl):
    model = _rec(encoding={"name": "rope"})
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    ht = tlens.to_hooked_transformer(loaded, n_ctx=40)
    tlens.save_hooked_transformer(ht, tmp_path / "tl")
    again = tlens.load_hooked_transformer(tmp_path / "tl")
    words = ["", "ab", "abba", "b" * 30]
    assert torch.equal(tlens.hooked_logits(again, loaded, words), tlens.hooked_logits(ht, loaded, words))
    assert torch.allclose(tlens.hooked_logits(ht, loaded, words), loaded.logits(words), atol=1e-5, rtol=0)
    cfg = json.loads((tmp_path / "tl" / "tlens_config.json").read_text())
    assert cfg["positional_embedding_type"] == "rotary" and cfg["attention_dir"] == "causal" and cfg["d_vocab_out"] == 1


@pytest.mark.slow
def test_learned_table_rows_are_w_pos_exactly(tmp_path, tl):
    """A learned absolute table (the causal setting's ``learned``) becomes W_pos row for row, bit for bit,
    and n_ctx is cut to the rows the table has (the original refuses longer inputs as well)."""
    model = _rec(4, readout="last", encoding={"name": "learned", "max_positions": 50, "init_std": 0.5})
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    ht = tlens.to_hooked_transformer(loaded, n_ctx=1024)
    assert ht.cfg.n_ctx == 50 and torch.equal(ht.pos_embed.W_pos.detach(), model.encoding.table.detach())
    check = tlens.check_export(loaded, ht, max_length=8, random_words=5, random_max_length=48, seed=3)
    assert check["decisions_equal"] and check["max_abs_diff"] <= TOL["float32"]


REFUSED = {
    "strict masks": dict(mask="strict", encoding={"name": "nope"}),
    "unique hard attention": dict(attention="hard", encoding={"name": "nope"}),
    "periodic tables (periodic RoPE": dict(encoding={"name": "rope_periodic", "periods": 2}),
    "periodic tables (absolute": dict(encoding={"name": "mod_onehot", "period": 2}),
    "post-norm": dict(norm="post", encoding={"name": "nope"}),
    "log-length score scaling": dict(length_scale="log", encoding={"name": "nope"}),
    "lag-table score biases": dict(encoding={"name": "pj_bias", "n_freqs": 1}),
    "a rotary encoding with recency score biases": dict(encoding={"name": "recency_periodic", "periods": 2}),
    "ALiBi under a mask other than the non-strict causal one": dict(mask="none", encoding={"name": "alibi"}),
}


@pytest.mark.parametrize("reason", list(REFUSED))
def test_refusals_name_the_reason(reason):
    model = _rec(**REFUSED[reason])
    with pytest.raises(tlens.TLensUnsupported) as info:
        tlens.to_hooked_transformer(model)
    assert any(r.startswith(reason) for r in info.value.extra["reasons"]), info.value.extra["reasons"]
    assert reason in info.value.detail and isinstance(info.value, UnsupportedError)


def test_constructed_models_are_refused_with_their_reasons():
    import langclass

    hard = langclass.construct("(ab)*", alphabet="ab", route="cascade", all_words_up_to=4, random_words=1,
                               random_max_length=10, return_model=True).model
    why = tlens.tlens_refusals(hard)
    assert any(r.startswith("unique hard attention") for r in why) and any(r.startswith("strict masks") for r in why)
    crasp = langclass.construct("(ab|ba)*", alphabet="ab", setting="causal", all_words_up_to=4, random_words=1,
                                random_max_length=10, return_model=True).model
    assert [r.split(" (")[0] for r in tlens.tlens_refusals(crasp)] == ["pair_norm"]


@pytest.mark.slow
def test_limits(tl):
    model = _rec(encoding={"name": "nope"})
    with pytest.raises(LimitExceeded):
        tlens.to_hooked_transformer(model, n_ctx=tlens.MAX_N_CTX + 1)
    ht = tlens.to_hooked_transformer(model, n_ctx=6)
    with pytest.raises(LimitExceeded):
        tlens.hooked_logits(ht, model, ["aaaaa"])  # BOS + 5 + EOS = 7 tokens > 6
    with pytest.raises(LimitExceeded):
        tlens.check_export(model, ht, max_length=20)
    with pytest.raises(LimitExceeded):
        tlens.check_export(model, ht, max_length=10 ** 9)  # refused from the count, before any word is built
    with pytest.raises(InputError):
        tlens.check_export(model, ht, max_length=-1)


@pytest.mark.slow
def test_cli_exports_and_refuses(tmp_path, tl):
    from typer.testing import CliRunner
    from langclass.app.cli.commands import app

    save_model(_rec(encoding={"name": "alibi"}), tmp_path / "ok")
    save_model(_rec(mask="strict", encoding={"name": "nope"}), tmp_path / "strict")
    runner = CliRunner()
    res = runner.invoke(app, ["export-tlens", str(tmp_path / "ok"), "--out", str(tmp_path / "tl"), "--check-length", "6",
                              "--random-words", "3", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["decisions_equal"] is True
    assert (tmp_path / "tl" / "tlens_model.safetensors").exists()
    res = runner.invoke(app, ["export-tlens", str(tmp_path / "strict"), "--out", str(tmp_path / "tl2")])
    assert res.exit_code == 2 and "strict masks" in res.output and not (tmp_path / "tl2").exists()


@pytest.mark.slow
def test_docs_example_runs(tl):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
    section = text[text.index("## TransformerLens export"):]
    block = section[section.index("```python\n") + len("```python\n"):]
    exec(compile(block[:block.index("```")], "docs/models.md", "exec"), {})


def test_missing_extra_is_named(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "transformer_lens", None)  # import fails as if not installed
    with pytest.raises(UnsupportedError) as info:
        tlens.to_hooked_transformer(_rec(encoding={"name": "nope"}))
    assert "langclass[interop]" in info.value.detail and info.value.extra["missing"] == "transformer_lens"
