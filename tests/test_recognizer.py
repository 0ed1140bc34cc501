"""The Recognizer: tokens, padding invariance, config validation, dtypes, traces, exact weights."""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from langclass.core.base.errors import AlphabetError, InputError, UnknownSymbolError
from langclass.models import BOS, EOS, PAD, Recognizer, RecognizerConfig, Vocabulary

ENCODINGS = [
    {"name": "nope"},
    {"name": "sinusoidal"},
    {"name": "sinusoidal_periodic", "periods": [2, 3]},
    {"name": "rope", "base": 100.0},
    {"name": "rope", "rotary_dim": 2, "pair_layout": "interleaved"},
    {"name": "rope_periodic", "periods": 2},
    {"name": "alibi"},
]


def test_vocabulary_and_batches():
    v = Vocabulary(("a", "b", "cc"))
    assert (PAD, BOS, EOS) == (0, 1, 2) and v.size == 6
    assert v.encode(["a", "cc", "b"]) == [BOS, 3, 5, 4, EOS]
    b = v.batch([["a"], [], ["b", "b", "a"]], pad_to=7)
    assert b.ids.tolist() == [[1, 3, 2, 0, 0, 0, 0], [1, 2, 0, 0, 0, 0, 0], [1, 4, 4, 3, 2, 0, 0]]
    assert b.eos_index.tolist() == [2, 1, 4] and b.lengths.tolist() == [1, 0, 3]
    assert b.valid.sum(1).tolist() == [3, 2, 5]
    assert v.decode(b.ids[2]) == ("b", "b", "a")
    assert v.batch_from_indices([[0, 2], [1]]).ids.tolist() == [[1, 3, 5, 2], [1, 4, 2, 0]]
    with pytest.raises(UnknownSymbolError):
        v.encode("ax")
    with pytest.raises(UnknownSymbolError):
        v.batch_from_indices([[3]])
    with pytest.raises(UnknownSymbolError):
        v.batch_from_indices([[-1]])
    with pytest.raises(AlphabetError):
        Vocabulary(())
    with pytest.raises(AlphabetError):
        Vocabulary(("a", "a"))
    with pytest.raises(AlphabetError):
        Vocabulary(("<bos>",))
    with pytest.raises(ValueError):
        v.batch([["a", "b"]], pad_to=2)


def _small(encoding, **kw):
    torch.manual_seed(0)
    cfg = dict(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=2, d_ff=32, encoding=encoding)
    cfg.update(kw)
    return Recognizer(RecognizerConfig(**cfg))


WORDS = ["", "a", "bba", "bbbbbbb", "aabba"]


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: "-".join(str(v) for v in e.values()))
@pytest.mark.parametrize("attention,norm,mask", [("soft", "pre", "strict"), ("soft", "post", "nonstrict"),
                                                 ("hard", "none", "strict"), ("hard", "pre", "none")])
def test_padding_never_changes_a_result(encoding, attention, norm, mask):
    m = _small(encoding, attention=attention, norm=norm, mask=mask, dtype="float64")
    alone = torch.cat([m.logits_for([w]) for w in WORDS])
    together = m.logits_for(WORDS)
    extra = m.forward_batch(m.vocab.batch(WORDS, pad_to=15))
    torch.testing.assert_close(together, alone, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(extra, alone, rtol=1e-9, atol=1e-9)
    # junk ids in padded slots (still marked invalid) change nothing either
    b = m.vocab.batch(WORDS, pad_to=12)
    junk = torch.where(b.valid, b.ids, torch.randint(1, m.vocab.size, b.ids.shape))
    torch.testing.assert_close(m(junk, b.valid, b.eos_index), alone, rtol=1e-9, atol=1e-9)


def test_padding_invariance_float32_default_model():
    m = _small({"name": "rope_periodic", "periods": 2})
    alone = torch.cat([m.logits_for([w]) for w in WORDS])
    torch.testing.assert_close(m.logits_for(WORDS), alone, rtol=1e-5, atol=1e-5)


def test_default_config_is_the_seed_model_and_round_trips():
    cfg = RecognizerConfig(alphabet=("a", "b"))
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.attention, cfg.mask) == (5, 64, 8, "soft", "strict")
    d = cfg.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert RecognizerConfig.from_dict(d) == cfg
    m = Recognizer(d)
    assert isinstance(m.config, RecognizerConfig)
    man = m.manifest()
    assert man["encoding"]["family"] == "nope" and len(m.digest()) == 64
    m2 = Recognizer(RecognizerConfig(alphabet=("a", "b"), encoding={"name": "rope"}))
    assert m2.digest() != m.digest() and m2.manifest()["encoding_digest"] == m2.encoding.digest()


@pytest.mark.parametrize("bad,field", [
    ({"attention": "linear"}, "model.attention"),
    ({"mask": "causal"}, "model.mask"),
    ({"norm": "rms"}, "model.norm"),
    ({"dtype": "int8"}, "model.dtype"),
    ({"d_model": 10, "n_heads": 3}, "model.d_head"),
    ({"n_layers": -1}, "model.n_layers"),
    ({"encoding": {"name": "rope", "rotary_dim": 3}}, "encoding.rotary_dim"),
    ({"encoding": {"name": "rope", "d_head": 4}}, "encoding.d_head"),
    ({"encoding": {"base": 1.0}}, "model.encoding"),
    ({"encoding": {"name": "fourier"}}, "encoding.name"),
    ({"dropout": 1.5}, "model.dropout"),
])
def test_invalid_configs_raise_typed_errors(bad, field):
    with pytest.raises(InputError) as e:
        RecognizerConfig(alphabet=("a",), **bad)
    assert e.value.field == field
    with pytest.raises(InputError):
        RecognizerConfig.from_dict({"alphabet": ["a"], "widht": 3})


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_dtypes_forward_and_backward(dtype):
    m = _small({"name": "rope", "rotary_dim": 4}, dtype=dtype)
    assert m.dtype == getattr(torch, dtype)
    assert m.encoding.inv_freq.dtype == (torch.float64 if dtype == "float64" else torch.float32)
    b = m.vocab.batch(WORDS)
    logits = m.forward_batch(b)
    assert logits.dtype == (torch.float64 if dtype == "float64" else torch.float32) and logits.shape == (len(WORDS),) and torch.isfinite(logits).all()
    torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.ones_like(logits)).backward()
    assert torch.isfinite(m.embedding.weight.grad.float()).all() and m.embedding.weight.grad.abs().sum() > 0
    assert m.layers[0].attn.q_proj.weight.grad.abs().sum() > 0


def test_autocast_cpu_training_step():
    m = _small({"name": "rope_periodic", "periods": 2})
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    b = m.vocab.batch(WORDS)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = m.forward_batch(b)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
    loss.backward()
    opt.step()
    assert m.embedding.weight.dtype == torch.float32 and torch.isfinite(loss)


def test_trace_shapes():
    m = _small({"name": "alibi"}, n_layers=3)
    logits, tr = m.forward_batch(m.vocab.batch(WORDS), return_trace=True)
    T = max(len(w) for w in WORDS) + 2
    assert len(tr.states) == 4 and tr.states[0].shape == (len(WORDS), T, 16)
    assert len(tr.attention) == 3 and tr.attention[0].weights.shape == (len(WORDS), 2, T, T)
    assert torch.equal(tr.logits, logits)
    # BOS row under the strict mask sees nothing
    assert tr.attention[0].weights[:, :, 0].abs().sum() == 0


def test_exact_weights_hard_attention_recognizes_a_sigma_star():
    """Set weights by hand (the hooks engineer F uses): leftmost hard attention, strict mask, NoPE,
    no LayerNorm — attend to the first letter (BOS scores lower) and read whether it is an 'a'."""
    cfg = RecognizerConfig(alphabet=("a", "b"), d_model=4, n_heads=1, n_layers=1, d_ff=1, attention="hard",
                           tie="leftmost", mask="strict", norm="none", score_scale=1.0)
    m = Recognizer(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        E = m.embedding.weight  # [vocab, d_model]; coordinates: 0 = is BOS, 1 = is a, 2 = head output
        E[BOS, 0] = 1.0
        E[m.vocab.symbol_id("a"), 1] = 1.0
        attn = m.layers[0].attn
        attn.q_proj.bias[0] = 1.0  # query constant 1
        attn.k_proj.weight[0, 0] = -1.0  # key score −[is BOS]
        attn.v_proj.weight[0, 1] = 1.0  # value = is a
        attn.out_proj.weight[2, 0] = 1.0  # → coordinate 2
        m.readout.weight[0, 2] = 1.0
        m.readout.bias[0] = -0.5
    words = ["".join(p) for n in range(6) for p in itertools.product("ab", repeat=n)]
    assert m.accepts(words) == [w.startswith("a") for w in words]


@pytest.mark.parametrize("encoding", [{"name": "alibi"}, {"name": "rope_periodic", "periods": 3}], ids=lambda e: e["name"])
def test_sdpa_implementation_matches_exact_path(encoding):
    exact = _small(encoding, mask="strict")
    fast = Recognizer(RecognizerConfig(**{**exact.config.to_dict(), "attention_impl": "sdpa"}))
    fast.load_state_dict(exact.state_dict())
    b = exact.vocab.batch(WORDS, pad_to=11)
    torch.testing.assert_close(fast.forward_batch(b), exact.forward_batch(b), rtol=1e-5, atol=1e-5)
    # padding invariance holds for the fused path too
    tight = fast.forward_batch(exact.vocab.batch(WORDS))
    torch.testing.assert_close(fast.forward_batch(b), tight, rtol=1e-5, atol=1e-5)
    # gradients are finite (the BOS row has no visible key under the strict mask)
    fast.forward_batch(b).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in fast.parameters() if p.grad is not None)


@pytest.mark.parametrize("mask", ["strict", "nonstrict"])
def test_future_tokens_never_influence_earlier_positions(mask):
    """The mask, not the encoding, decides visibility (failure lab: 'relying on RoPE instead of a causal mask')."""
    for encoding in ({"name": "rope"}, {"name": "alibi"}, {"name": "sinusoidal"}):
        m = _small(encoding, mask=mask, dtype="float64")
        b1 = m.vocab.batch(["abbab"])
        b2 = m.vocab.batch(["abbba"])  # differs from index 4 (letter 4) on
        _, t1 = m.forward_batch(b1, return_trace=True)
        _, t2 = m.forward_batch(b2, return_trace=True)
        for s1, s2 in zip(t1.states, t2.states):
            torch.testing.assert_close(s1[:, :4], s2[:, :4], rtol=0, atol=1e-12)
            assert not torch.allclose(s1[:, 4:], s2[:, 4:])


def test_state_dict_round_trip_rebuilds_tables_from_config():
    m = _small({"name": "rope_periodic", "periods": [2, 3]}, d_model=16, n_heads=2)
    sd = m.state_dict()
    assert not any("inv_freq" in k or "table" in k for k in sd)  # derived state is rebuilt from the config
    fresh = Recognizer(m.config)
    fresh.load_state_dict(sd)
    assert fresh.encoding.digest() == m.encoding.digest()
    torch.testing.assert_close(fresh.logits_for(WORDS), m.logits_for(WORDS), rtol=0, atol=0)
