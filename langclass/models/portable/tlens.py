"""A portable model → TransformerLens ``HookedTransformer`` (optional extra ``interop``), where TL represents it exactly.

The export reads the ``langclass.portable/1`` config and tensors (docs/models.md), so every model
langclass constructs or trains goes through one mapping. TransformerLens (``transformer_lens``
3.x; version 4 removed ``HookedTransformer``) runs one pre-norm (or norm-free) decoder: softmax
heads of one width, one mask for all heads (``causal`` = j ≤ i, or ``bidirectional``), one
positional scheme for the whole model (a learned table ``W_pos`` added to the embedding, θ·i rotary
from a base, or its own ALiBi slopes), one activation and one score scale. The mapping:

* heads: ``W_Q/W_K/W_V [head, d_model, d_head]`` and ``W_O [head, d_head, d_model]`` are the rows of
  the config's fused ``q/k/v`` projections (and the columns of ``o``), heads of smaller width
  padded with zeros (a zero query/key coordinate adds 0 to every score; a zero value coordinate
  meets a zero row of ``W_O``); a ``soft_uniform`` head (C-RASP counting, ``d_qk`` 0) has zero
  queries and keys, so TL's softmax of equal scores is the same uniform average;
* score scale: TL divides by ``attn_scale``: ``use_attn_scale=False`` for scale 1, else
  ``attn_scale = 1/score_scale`` (exact when 1/score_scale is a power of two, e.g. d_head 4, 16, 64);
* positions: absolute encodings (sinusoidal, and the learned table of the causal setting) become
  the first ``n_ctx`` rows of ``W_pos`` (``position_origin`` applied; a learned table's rows are
  copied, so 0 + row is the row exactly, and ``n_ctx`` is cut to the rows the table has: the
  original refuses longer inputs too), NoPE a zero ``W_pos``;
  conventional RoPE ``rotary`` with ``rotary_base`` read off ``inv_freq`` and
  ``rotary_adjacent_pairs`` = interleaved, its ``rotary_sin``/``rotary_cos`` buffers overwritten
  by the runner's own tables (phase in the compute dtype, cos/sin in float64); ALiBi ``alibi``
  when the slopes are TL's ``2^(−8(h+1)/H)`` and the mask is causal;
* layers without attention or feed-forward get zero weights (they add exactly 0), feed-forward
  widths are padded with zero units (relu(0) = gelu(0) = 0);
* readout: ``d_vocab_out`` 1 with ``W_U = readout.weight^T`` and ``b_U`` the readout bias, so
  ``ht(tokens)[:, -1, 0]`` is the accept logit (accept iff > the config's threshold).

What TL cannot represent is refused with :class:`TLensUnsupported` (an ``UnsupportedError``: HTTP
422, CLI exit 2) listing every reason: strict masks (j < i), anticausal masks, mixed masks,
unique hard attention, periodic tables (absolute or rotary: TL's rotary is θ·i from a base,
a periodic table is exact at every length), PJ-rotary jets, custom rotary schedules, ALiBi with
other slopes or under any mask but the non-strict causal one, lag-table biases, per-layer encodings, the C-RASP
``pair_norm`` gadget, post-norm, log-length score scaling, per-layer score scales or activations.

Source of the architecture conventions: *Attention Is All You Need* (the transformer),
*RoFormer: Enhanced Transformer with Rotary Position Embedding* (rotary), *Train Short, Test
Long: Attention with Linear Biases Enables Input Length Extrapolation* (ALiBi).
"""

from __future__ import annotations

import json
import os
import random
import warnings
from typing import Any

import torch

from langclass.core.base.errors import InputError, LimitExceeded, TLensUnsupported, UnsupportedError
from langclass.models.portable import runner as R

__all__ = ["TLensUnsupported", "tlens_refusals", "to_hooked_transformer", "hooked_logits", "check_export",
           "save_hooked_transformer", "load_hooked_transformer",
           "TLENS_VERSION", "MAX_N_CTX", "MAX_CHECK_WORDS"]

TLENS_VERSION = "3.9.0"
"""The transformer_lens release the extra pins (the last with ``HookedTransformer``)."""
MAX_N_CTX = 65_536
"""Largest context (tokens) an export allocates; ``W_pos`` holds ``n_ctx × d_model`` numbers."""
MAX_CHECK_WORDS = 200_000
"""Most words :func:`check_export` compares (all words to ``max_length`` plus the random ones)."""


def _model_of(model: Any) -> R.PortableTransformer:
    """A :class:`~langclass.models.portable.runner.PortableTransformer` of ``model`` (a loaded
    portable model, or any model :func:`~langclass.models.portable.export.portable_parts` exports)."""
    if isinstance(model, R.PortableTransformer):
        return model
    from langclass.models.portable.export import portable_parts

    config, tensors = portable_parts(model)
    return R.PortableTransformer(config, tensors)


def _tl_alibi_slopes(n_heads: int) -> torch.Tensor:
    start = 2 ** (-8 / n_heads)
    return start * (start ** torch.arange(n_heads))  # float32, as TransformerLens computes them


def _rotary_base(inv_freq: torch.Tensor, rotary_dim: int) -> float | None:
    """The base β with inv_freq[k] = β^(−2k/rotary_dim) (relative error ≤ 1e-6), else None."""
    n = rotary_dim // 2
    f = inv_freq.double()
    if n == 0 or abs(float(f[0]) - 1.0) > 1e-6:
        return None
    if n == 1:
        return 10_000.0
    base = float(f[1]) ** (-rotary_dim / 2)
    want = base ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    return base if bool(((f - want).abs() <= 1e-6 * want.abs()).all()) else None


def tlens_refusals(model: Any) -> list[str]:
    """Every reason TransformerLens cannot represent ``model`` exactly (empty: exportable).

    Args:
        model: a portable model (:func:`langclass.load_model`) or a langclass model.

    Returns:
        One sentence per reason, each naming the construct (e.g. ``"strict masks (causal_strict:
        j < i) …"``); the same list :func:`to_hooked_transformer` refuses with.
    """
    m = _model_of(model)
    s = m.spec
    why: list[str] = []
    heads = [h for layer in s["layers"] if layer["attention"] for h in layer["attention"]["heads"]]
    kinds = {h["attention"] for h in heads}
    masks = {h["mask"] for h in heads}
    if "hard_unique" in kinds:
        why.append("unique hard attention (hard_unique heads): TransformerLens attention is a softmax")
    if masks & {"causal_strict", "anticausal_strict"}:
        why.append("strict masks (causal_strict: j < i): TransformerLens' causal mask is j <= i")
    if masks & {"anticausal_strict", "anticausal_nonstrict"}:
        why.append("anticausal masks (j > i, j >= i): TransformerLens masks only the future")
    if masks == {"causal_nonstrict", "none"}:
        why.append("a mix of causal and unmasked heads: TransformerLens has one attention_dir per model")
    if s["norm"] == "post":
        why.append("post-norm layers (LN after each residual): HookedTransformer is pre-norm")
    if s["norm"] == "pre" and not s["final_norm"] or s["norm"] == "none" and s["final_norm"]:
        why.append("a final norm without pre-norm layers (or pre-norm without one)")
    if any(layer["pair_norm"] is not None for layer in s["layers"]):
        why.append("pair_norm (the layer normalization of coordinate pairs, C-RASP's sign gadget): "
                   "TransformerLens normalizes whole residual vectors only")
    atts = [layer["attention"] for layer in s["layers"] if layer["attention"]]
    if any(a["length_scale"] != "none" for a in atts):
        why.append("log-length score scaling (length_scale log)")
    if len({a["score_scale"] for a in atts}) > 1:
        why.append("score scales that differ between layers: TransformerLens has one attn_scale")
    acts = {layer["ffn"]["activation"] for layer in s["layers"] if layer["ffn"]}
    if len(acts) > 1:
        why.append("activations that differ between layers: TransformerLens has one act_fn")
    absolute = s["absolute"]
    if absolute is not None and absolute.form == "periodic_tables":
        why.append("periodic tables (absolute periodic_tables, e.g. mod_onehot marks): TransformerLens' W_pos "
                   "is a table of n_ctx rows, not T(i mod m) at every length")
    used = {a["encoding"] for a in atts}
    encs = [s["encodings"][e] for e in used if e is not None]
    if len(used) > 1:
        why.append("per-layer positional encodings: TransformerLens has one positional_embedding_type per model")
    for enc in encs:
        if enc.kind == "rotary":
            if absolute is not None:
                why.append("an absolute and a rotary encoding together")
            if enc.tables is not None:
                why.append("periodic tables (periodic RoPE T(i mod m)): TransformerLens' rotary is θ·i from a base")
            elif enc.jet is not None:
                why.append("the PJ-rotary jet (exp(±ε i N) before the rotation)")
            elif _rotary_base(enc.inv_freq, enc.rotary_dim) is None:
                why.append("a custom rotary schedule (inv_freq not β^(−2k/rotary_dim) for any base β)")
            if enc.slopes is not None:
                why.append("a rotary encoding with recency score biases (recency_periodic): TransformerLens has one "
                           "positional_embedding_type per model")
            if enc.origin != 0:
                why.append("rotary positions that start at a position_origin other than 0")
            if enc.scores_fp32 and s["dtype"] in ("float16", "bfloat16"):
                why.append("rotary scores in float32 for a half-precision model")
        elif enc.kind == "bias" and enc.form == "lag_table":
            why.append("lag-table score biases (PJ-bias kernels K_h(i − j))")
        elif enc.kind == "bias":
            if absolute is not None:
                why.append("an absolute encoding and ALiBi together")
            if any(len(a["heads"]) != enc.n_heads for a in atts):
                why.append("ALiBi in layers with different head counts (TL's slopes follow the model's n_heads)")
            elif not torch.allclose(enc.slopes.double(), _tl_alibi_slopes(enc.n_heads).double(), rtol=1e-6, atol=0.0):
                why.append("ALiBi slopes other than TransformerLens' 2^(−8(h+1)/H)")
            if masks != {"causal_nonstrict"}:
                why.append("ALiBi under a mask other than the non-strict causal one (j <= i; TransformerLens' ALiBi "
                           "is 0 on future keys)")
            if "soft_uniform" in kinds:
                why.append("uniform heads under ALiBi (the bias would weigh their keys)")
    return why


def _refuse(why: list[str]) -> TLensUnsupported:
    return TLensUnsupported("TransformerLens cannot represent this model exactly: " + "; ".join(why) + ".",
                            field="model", reasons=why)


def _transformer_lens():
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        raise UnsupportedError(f"the TransformerLens export needs the optional extra: pip install 'langclass[interop]' "
                               f"(transformer_lens=={TLENS_VERSION})", field="model", missing="transformer_lens") from None
    return HookedTransformer, HookedTransformerConfig


@torch.no_grad()
def to_hooked_transformer(model: Any, *, n_ctx: int = 1024, device: str | torch.device = "cpu") -> Any:
    """Build a TransformerLens ``HookedTransformer`` that computes the same function as ``model``.

    Args:
        model: a portable model (:func:`langclass.load_model`) or a langclass model
            (``FormulaTransformer``, ``BraspTransformer``, ``CountingTransformer``, ``Recognizer``).
        n_ctx: the context length in tokens (BOS and EOS included), 2 … :data:`MAX_N_CTX`; for a
            learned position table at most its rows (``max_positions − position_origin``; a longer
            ``n_ctx`` is cut to that, since the original model has no row beyond it either).
        device: where the HookedTransformer lives.

    Returns:
        A ``HookedTransformer`` (dtype of the model) with ``d_vocab`` = the config's vocabulary
        (pad 0, BOS 1, EOS 2, letters from ``first_letter``) and ``d_vocab_out`` 1:
        ``ht(tokens int64 [batch, seq])[:, -1, 0]`` is the accept logit of each unpadded row framed
        as the config says (:func:`hooked_logits` does the framing). Every hook of TL is available
        (``run_with_cache``: ``blocks.{l}.attn.hook_pattern`` etc.).

    Raises:
        TLensUnsupported: the model uses something TL cannot represent (every reason listed).
        UnsupportedError: ``transformer_lens`` is not installed (the ``interop`` extra).
        LimitExceeded: ``n_ctx`` outside 2 … MAX_N_CTX.
    """
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or not 2 <= n_ctx <= MAX_N_CTX:
        raise LimitExceeded("tlens_max_n_ctx", MAX_N_CTX, f"n_ctx must lie in 2 … {MAX_N_CTX}, got {n_ctx!r}", field="n_ctx")
    m = _model_of(model)
    why = tlens_refusals(m)
    if why:
        raise _refuse(why)
    HookedTransformer, HookedTransformerConfig = _transformer_lens()
    s = m.spec
    absolute = s["absolute"]
    if absolute is not None and absolute.form == "learned_table":
        absolute.tensors["table"] = m.t(absolute.tensor_name)
        n_ctx = max(1, min(n_ctx, absolute.n_rows - absolute.origin))
    dtype = R.DTYPES[s["dtype"]]
    D = int(m.t("embed.weight").shape[1])
    V = int(m.t("embed.weight").shape[0])
    atts = [layer["attention"] for layer in s["layers"] if layer["attention"]]
    H = max([len(a["heads"]) for a in atts] + [1])
    d_head = max([max(h["d_qk"], h["d_v"]) for a in atts for h in a["heads"]] + [1])
    ffns = [layer["ffn"] for layer in s["layers"] if layer["ffn"]]
    d_mlp = max([int(m.t(f"layers.{l}.ffn.fc1.weight").shape[0]) for l, layer in enumerate(s["layers"]) if layer["ffn"]] + [1])
    scale = atts[0]["score_scale"] if atts else 1.0
    enc = next((s["encodings"][a["encoding"]] for a in atts if a["encoding"] is not None), None)
    masks = {h["mask"] for a in atts for h in a["heads"]}
    pos_type = "standard"
    extra: dict[str, Any] = {}
    if enc is not None and enc.kind == "rotary":
        pos_type = "rotary"
        extra = {"rotary_dim": enc.rotary_dim, "rotary_base": _rotary_base(enc.inv_freq, enc.rotary_dim),
                 "rotary_adjacent_pairs": enc.layout == "interleaved"}
    elif enc is not None and enc.kind == "bias":
        pos_type = "alibi"
    kwargs = dict(
        n_layers=len(s["layers"]), d_model=D, n_ctx=n_ctx, d_head=d_head, n_heads=H, d_mlp=None if not ffns else d_mlp,
        d_vocab=V, d_vocab_out=1, act_fn=ffns[0]["activation"] if ffns else None, attn_only=not ffns,
        eps=s["eps"], normalization_type="LN" if s["norm"] == "pre" else None,
        attention_dir="bidirectional" if masks == {"none"} else "causal",
        use_attn_scale=scale != 1.0, attn_scale=1.0 / scale if scale != 1.0 else -1.0,
        positional_embedding_type=pos_type, dtype=dtype, device=str(device), init_weights=False,
        default_prepend_bos=False, original_architecture="langclass.portable/1", **extra)
    with warnings.catch_warnings():  # 3.9 announces HookedTransformer's removal in 4.0: the pin is deliberate
        warnings.simplefilter("ignore", DeprecationWarning)
        ht = HookedTransformer(HookedTransformerConfig(**kwargs), move_to_device=False)
    params = dict(ht.named_parameters())  # zeroed; buffers (TL's IGNORE = −inf, rotary tables) kept
    sd = {k: torch.zeros_like(v) if k in params else v.clone() for k, v in ht.state_dict().items()}
    sd["embed.W_E"] = m.t("embed.weight").detach().clone()
    if pos_type == "standard":
        if absolute is not None:
            zero = torch.zeros(1, n_ctx, D, dtype=dtype)
            sd["pos_embed.W_pos"] = absolute.embed(zero, absolute.positions(n_ctx))[0].to(dtype)
    for l, layer in enumerate(s["layers"]):
        p = f"blocks.{l}."
        att = layer["attention"]
        if s["norm"] == "pre":
            for n in ("ln1", "ln2"):
                sd[p + n + ".w"] = m.t(f"layers.{l}.{n}.weight").detach().clone()
                sd[p + n + ".b"] = m.t(f"layers.{l}.{n}.bias").detach().clone()
        if att is not None:
            q, k, v, o = (m.t(f"layers.{l}.attn.{n}.weight") for n in "qkvo")
            qb, kb, vb = (m.t(f"layers.{l}.attn.{n}.bias") for n in "qkv")
            qo = vo = 0
            for h, hd in enumerate(att["heads"]):
                a, c = hd["d_qk"], hd["d_v"]
                for name, W, b in (("Q", q, qb), ("K", k, kb)):
                    sd[p + f"attn.W_{name}"][h, :, :a] = W[qo:qo + a].T
                    if b is not None:
                        sd[p + f"attn.b_{name}"][h, :a] = b[qo:qo + a]
                sd[p + "attn.W_V"][h, :, :c] = v[vo:vo + c].T
                if vb is not None:
                    sd[p + "attn.b_V"][h, :c] = vb[vo:vo + c]
                sd[p + "attn.W_O"][h, :c, :] = o[:, vo:vo + c].T
                qo, vo = qo + a, vo + c
            if m.t(f"layers.{l}.attn.o.bias") is not None:
                sd[p + "attn.b_O"] = m.t(f"layers.{l}.attn.o.bias").detach().clone()
        if layer["ffn"] is not None:
            fc1, fc2 = m.t(f"layers.{l}.ffn.fc1.weight"), m.t(f"layers.{l}.ffn.fc2.weight")
            w = fc1.shape[0]
            sd[p + "mlp.W_in"][:, :w] = fc1.T
            sd[p + "mlp.W_out"][:w, :] = fc2.T
            if m.t(f"layers.{l}.ffn.fc1.bias") is not None:
                sd[p + "mlp.b_in"][:w] = m.t(f"layers.{l}.ffn.fc1.bias")
                sd[p + "mlp.b_out"] = m.t(f"layers.{l}.ffn.fc2.bias").detach().clone()
        if pos_type == "rotary":  # the runner's own cos/sin (same phase rule), in TL's layout
            rows = sd[p + "attn.rotary_cos"].shape[0]
            cos, sin = enc._cos_sin(torch.arange(rows).unsqueeze(0))
            rep = (lambda t: t.repeat_interleave(2, dim=-1)) if enc.layout == "interleaved" else (lambda t: torch.cat((t, t), dim=-1))
            sd[p + "attn.rotary_cos"] = rep(cos[0]).to(dtype)
            sd[p + "attn.rotary_sin"] = rep(sin[0]).to(dtype)
    if s["final_norm"]:
        sd["ln_final.w"] = m.t("final_norm.weight").detach().clone()
        sd["ln_final.b"] = m.t("final_norm.bias").detach().clone()
    sd["unembed.W_U"] = m.t("readout.weight").detach().T.clone()
    if m.t("readout.bias") is not None:
        sd["unembed.b_U"] = m.t("readout.bias").detach().clone()
    ht.load_state_dict(sd, strict=True)
    ht.eval()
    ht.langclass_config = {**kwargs, "dtype": s["dtype"], "device": "cpu"}  # what save_hooked_transformer writes
    ht.langclass_threshold = m.threshold
    return ht if str(device) == "cpu" else ht.to(device, print_details=False)


TL_CONFIG_FILE = "tlens_config.json"
TL_WEIGHTS_FILE = "tlens_model.safetensors"


def save_hooked_transformer(ht: Any, directory: str | os.PathLike) -> list[str]:
    """Write an exported ``ht`` as ``tlens_config.json`` (the ``HookedTransformerConfig`` arguments,
    dtype by name) and ``tlens_model.safetensors`` (its state dict, rotary tables included).

    Returns:
        The two paths written. Reload with :func:`load_hooked_transformer` or, without langclass,
        ``HookedTransformer(HookedTransformerConfig(**cfg))`` + ``load_state_dict`` (docs/models.md).
    """
    from safetensors.torch import save_file

    os.makedirs(directory, exist_ok=True)
    cfg_path, w_path = os.path.join(directory, TL_CONFIG_FILE), os.path.join(directory, TL_WEIGHTS_FILE)
    with open(cfg_path, "w", encoding="utf-8") as fh:
        json.dump({**ht.langclass_config, "langclass_threshold": ht.langclass_threshold}, fh, indent=1, sort_keys=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in ht.state_dict().items()}, w_path)
    return [cfg_path, w_path]


def load_hooked_transformer(directory: str | os.PathLike) -> Any:
    """The ``HookedTransformer`` written by :func:`save_hooked_transformer` (safetensors: no code runs).

    Raises:
        UnsupportedError: ``transformer_lens`` is not installed.
        FileNotFoundError: a file is missing.
    """
    from safetensors.torch import load_file

    HookedTransformer, HookedTransformerConfig = _transformer_lens()
    with open(os.path.join(directory, TL_CONFIG_FILE), encoding="utf-8") as fh:
        kw = json.load(fh)
    threshold = kw.pop("langclass_threshold", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ht = HookedTransformer(HookedTransformerConfig(**{**kw, "dtype": R.DTYPES[kw["dtype"]]}), move_to_device=False)
    ht.load_state_dict(load_file(os.path.join(directory, TL_WEIGHTS_FILE)), strict=True)
    ht.eval()
    ht.langclass_config, ht.langclass_threshold = kw, threshold
    return ht


@torch.no_grad()
def hooked_logits(ht: Any, model: Any, words: list, *, batch_size: int = 512) -> torch.Tensor:
    """Accept logits of ``words`` by the exported ``ht``: ``float64 [len(words)]``.

    Words are framed as ``model``'s config says (``BOS w EOS`` …) and run in batches of equal
    length (no padding), the logit read at the last position. Under the ``word`` framing the empty
    word has no position: threshold ± 1 by the config's declaration, as the runner does.

    Raises:
        ValueError: a letter outside the alphabet.
        LimitExceeded: a framed word longer than ``ht.cfg.n_ctx`` tokens.
    """
    m = _model_of(model)
    words = list(words)
    out = torch.zeros(len(words), dtype=torch.float64)
    by_len: dict[int, list[int]] = {}
    for i, w in enumerate(words):
        if not len(w) and m.spec["framing"] == "word":
            out[i] = m.threshold + (1.0 if m.spec["empty_word"] else -1.0)
        else:
            by_len.setdefault(len(w), []).append(i)
    dev = ht.W_E.device
    for _, idx in sorted(by_len.items()):
        for b in range(0, len(idx), batch_size):
            part = idx[b:b + batch_size]
            ids, _ = m.encode([words[i] for i in part])
            if ids.shape[1] > ht.cfg.n_ctx:
                raise LimitExceeded("n_ctx", ht.cfg.n_ctx, f"a framed word of {ids.shape[1]} tokens exceeds the export's n_ctx "
                                    f"{ht.cfg.n_ctx}", field="words")
            out[part] = ht(ids.to(dev))[:, -1, 0].double().cpu()
    return out


def check_export(model: Any, ht: Any, *, max_length: int = 8, random_words: int = 20, random_max_length: int = 64,
                 seed: int = 0) -> dict[str, Any]:
    """Compare ``ht`` with ``model`` on every word up to ``max_length`` and random longer words.

    Returns:
        ``{"words_checked", "all_words_up_to", "random_words", "random_max_length", "max_abs_diff",
        "decisions_equal", "disagreements"}`` (at most 5 disagreeing words with both logits). The
        logits agree up to floating-point reassociation (TL's einsum/addmm order, its LayerNorm
        formula): equal decisions are the criterion, ``max_abs_diff`` the measured distance.

    Raises:
        InputError: a negative length or count.
        LimitExceeded: more than :data:`MAX_CHECK_WORDS` words, or words longer than ``n_ctx``.
    """
    for name, v in (("max_length", max_length), ("random_words", random_words), ("random_max_length", random_max_length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"{name} must be a non-negative integer, got {v!r}", field=name)
    m = _model_of(model)
    k, n_all, layer = len(m.alphabet), 1, 1
    for _ in range(max_length):  # stops as soon as the count passes the limit (no k ** 10**6)
        layer *= k
        n_all += layer
        if n_all > MAX_CHECK_WORDS:
            break
    if n_all + random_words > MAX_CHECK_WORDS:
        raise LimitExceeded("tlens_max_check_words", MAX_CHECK_WORDS, f"{n_all + random_words} words to check, over the "
                            f"limit of {MAX_CHECK_WORDS}", field="max_length")
    words: list = [[]]
    frontier: list = [[]]
    for _ in range(max_length):
        frontier = [w + [a] for w in frontier for a in m.alphabet]
        words += frontier
    rng = random.Random(seed)
    for _ in range(random_words):
        words.append([rng.choice(m.alphabet) for _ in range(rng.randint(max_length + 1, max(max_length + 1, random_max_length)))])
    ref = m.logits(words, batch_size=512)
    got = hooked_logits(ht, m, words)
    t = m.threshold
    bad = [i for i in range(len(words)) if bool(ref[i] > t) != bool(got[i] > t)]
    return {"words_checked": len(words), "all_words_up_to": max_length, "random_words": random_words,
            "random_max_length": random_max_length, "max_abs_diff": float((ref - got).abs().max()) if words else 0.0,
            "decisions_equal": not bad,
            "disagreements": [{"word": "".join(words[i]), "logit": float(ref[i]), "tlens_logit": float(got[i])} for i in bad[:5]]}
