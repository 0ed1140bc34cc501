"""A built or trained transformer → the portable format (``config.json`` + ``model.safetensors`` + runner).

Four model classes are exported, each with every number it runs on:

* :class:`~langclass.models.construct.soft.FormulaTransformer` (soft attention, strict causal mask,
  ``BOS w EOS``, per-layer encodings: NoPE, periodic RoPE tables, conventional RoPE, ALiBi recency);
* :class:`~langclass.models.construct.hard.BraspTransformer` (unique hard attention, each head with its
  own mask and tie rule, the bare word, ``mod_onehot`` marks, the empty word by declaration);
* :class:`~langclass.models.nn.recognizer.Recognizer` (the trained recognizer: pre/post/no norm,
  every encoding family; a ``pj_bias`` kernel is exported as its lag table K_h(d), d < ``n_lags``);
* :class:`~langclass.models.construct.counting.CountingTransformer` (the C-RASP construction of the
  causal setting: framing ``BOS w``, ``soft_uniform`` heads with mask ``causal_nonstrict``, the
  layer normalization of each comparison channel's coordinate pair as ``pair_norm`` with its
  epsilon, readout at the last position).

Positional encodings are written as data: periodic tables as tables T(r), r < m (never θ·i),
conventional RoPE and sinusoidal PE as their frequency lists with the phase rule the runner
follows. The runner (:mod:`langclass.models.portable.runner`, shipped as ``langclass_runner.py``)
reproduces the original's forward pass operation by operation; tests/test_portable.py checks
equality on every word to length 10 and on random words to length 1,000 per construction route and
per trained encoding.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import torch
from safetensors.torch import save as st_save

from langclass.core.base.errors import InputError
from langclass.models.portable import runner as R
from langclass.version import code_version

__all__ = ["portable_parts", "save_model", "model_files", "zip_models", "summary_of", "RUNNER_NAME", "DEFAULT_LAG_TOKENS"]

RUNNER_NAME = "langclass_runner.py"
DEFAULT_LAG_TOKENS = 4096
"""Sequences (BOS + word + EOS) up to this many tokens run on an exported ``pj_bias`` model (its
kernel is a lag table; longer inputs are refused by the runner with a :class:`LimitError`)."""

_HARD_MASKS = {"none": "none", "future": "causal_strict", "past": "anticausal_strict",
               "future_nonstrict": "causal_nonstrict", "past_nonstrict": "anticausal_nonstrict"}
_SOFT_MASKS = {"strict": "causal_strict", "nonstrict": "causal_nonstrict", "none": "none"}


def _floats(t: torch.Tensor) -> list:
    return [float(v) for v in t.detach().double().reshape(-1).tolist()]


def _encoding(enc: Any, *, layer_rows: slice | None = None, n_lags: int, name: str, tensors: dict) -> dict | None:
    """The config entry of one positional encoding module (None for NoPE)."""
    fam = enc.family
    base = {"family": fam, "position_origin": int(enc.position_origin), "compute_dtype": enc.compute_dtype}
    if fam == "nope":
        return {**base, "kind": "none"}
    if fam == "sinusoidal":
        return {**base, "kind": "absolute", "form": "sinusoidal", "d_model": enc.d_model, "dim": enc.dim,
                "table_dtype": enc.compute_dtype, "inv_freq": _floats(enc.inv_freq)}
    if fam == "sinusoidal_periodic":
        comps = [{"period": m, "channels": [2 * t, 2 * t + 1],
                  "table": [[float(enc.sin_table[t, r]), float(enc.cos_table[t, r])] for r in range(m)]}
                 for t, m in enumerate(enc.periods)]
        return {**base, "kind": "absolute", "form": "periodic_tables", "d_model": enc.d_model, "table_dtype": enc.compute_dtype,
                "components": comps}
    if fam == "mod_onehot":
        table = [[1.0 if c == r else 0.0 for c in range(enc.d_model)] for r in range(enc.period)]
        return {**base, "kind": "absolute", "form": "periodic_tables", "d_model": enc.d_model, "table_dtype": "float32",
                "components": [{"period": enc.period, "channels": list(range(enc.d_model)), "table": table}]}
    if fam in ("rope", "rope_periodic", "pj_rotary"):
        out = {**base, "kind": "rotary", "d_head": enc.d_head, "rotary_dim": enc.rotary_dim,
               "pair_layout": "interleaved" if fam == "pj_rotary" else enc.pair_layout,
               "output_dtype": "compute_if_half" if fam == "pj_rotary" else "model", "scores_in_fp32": fam == "pj_rotary"}
        if fam == "rope_periodic" or (fam == "pj_rotary" and enc.roots is not None):
            cos, sin, periods = ((enc.cos_table, enc.sin_table, enc.periods) if fam == "rope_periodic"
                                 else (enc.root_cos, enc.root_sin, enc.root_q.tolist()))
            out.update(periods=[int(m) for m in periods], cos_table=[_floats(cos[d, :m]) for d, m in enumerate(periods)],
                       sin_table=[_floats(sin[d, :m]) for d, m in enumerate(periods)])
        else:
            out["inv_freq"] = _floats(enc.inv_freq)
        if fam == "pj_rotary":
            out["jet"] = {"order": enc.order, "epsilon": enc.epsilon}
        return out
    if fam == "alibi":
        return {**base, "kind": "bias", "form": "alibi", "n_heads": enc.n_heads, "slopes": _floats(enc.slope_t)}
    if fam == "learned":  # the trained rows themselves (a parameter of the model), one per position
        tensors[name] = enc.table.detach().contiguous()
        return {**base, "kind": "absolute", "form": "learned_table", "d_model": enc.d_model, "table_dtype": enc.compute_dtype,
                "max_positions": enc.max_positions, "tensor": name}
    if fam in ("recency", "recency_periodic"):
        with torch.no_grad():  # the learned slopes, frozen: the same bias −s_h·|i − j| as an ALiBi table
            slopes = _floats(enc.slopes())
        if enc.rope is not None:  # periodic RoPE tables and the slopes on the same heads: rotate, then add the bias
            return {**_encoding(enc.rope, n_lags=n_lags, name=name, tensors=tensors), "family": fam, "n_heads": enc.n_heads,
                    "slopes": slopes}
        return {**base, "kind": "bias", "form": "alibi", "n_heads": enc.n_heads, "slopes": slopes}
    if fam == "pj_bias":
        with torch.no_grad():
            table = enc.kernel(n_lags)[layer_rows if layer_rows is not None else slice(None)]
        tensors[name] = table.to(R.DTYPES[enc.compute_dtype]).contiguous()
        return {**base, "kind": "bias", "form": "lag_table", "n_heads": int(table.shape[0]), "n_lags": n_lags, "tensor": name}
    raise InputError(f"encoding family {fam!r} has no portable form", field="encoding")


def _linear(tensors: dict, name: str, layer: torch.nn.Linear | None, weight: torch.Tensor | None = None,
            bias: torch.Tensor | None = None) -> None:
    w = layer.weight if layer is not None else weight
    b = layer.bias if layer is not None else bias
    tensors[name + ".weight"] = w.detach().contiguous()
    if b is not None:
        tensors[name + ".bias"] = b.detach().contiguous()


def _ffn(tensors: dict, l: int, fc1, fc2, activation: str) -> dict:
    _linear(tensors, f"layers.{l}.ffn.fc1", fc1)
    _linear(tensors, f"layers.{l}.ffn.fc2", fc2)
    return {"d_ff": fc1.out_features, "activation": activation, "bias": fc1.bias is not None}


def _formula(model: Any, n_lags: int) -> tuple[dict, dict]:
    tensors: dict[str, torch.Tensor] = {"embed.weight": model.embed.weight.detach()}
    encs = [_encoding(e, n_lags=n_lags, name=f"encodings.{i}.table", tensors=tensors) for i, e in enumerate(model.encodings)]
    layers = []
    for l, (attn, e, ffn) in enumerate(zip(model.layers, model.layer_encoding_index, model.ffns)):
        att = None
        if attn is not None:
            for n, lin in (("q", attn.q_proj), ("k", attn.k_proj), ("v", attn.v_proj), ("o", attn.out_proj)):
                _linear(tensors, f"layers.{l}.attn.{n}", lin)
            roles = [f"{h.kind}" for h in model.layers_plan[l].heads]
            att = {"encoding": e, "score_scale": attn.score_scale, "length_scale": attn.length_scale, "bias": True,
                   "heads": [{"attention": "soft", "mask": _SOFT_MASKS[attn.mask], "tie": None, "d_qk": attn.d_head,
                              "d_v": attn.d_head, "role": role} for role in roles]}
        layers.append({"attention": att, "ffn": None if ffn is None else _ffn(tensors, l, ffn[0], ffn[2], "relu")})
    _linear(tensors, "readout", model.readout)
    config = {"dtype": model.dtype_name, "d_model": model.d_model, "norm": "none", "final_norm": False,
              "vocabulary": {"letters": list(model.alphabet), "framing": "bos_word_eos", "pad": 0, "bos": 1, "eos": 2, "first_letter": 3},
              "encodings": encs, "absolute_encoding": None, "layers": layers,
              "readout": {"position": "eos", "threshold": 0.0, "bias": True, "empty_word": None,
                          "rule": "accept iff readout(state at EOS) > threshold"}}
    return config, tensors


def _brasp(model: Any, n_lags: int) -> tuple[dict, dict]:
    tensors: dict[str, torch.Tensor] = {"embed.weight": model.embed.weight.detach()}
    layers = []
    for l, (heads, ffn) in enumerate(zip(model.attn_layers, model.ffns)):
        att = None
        if len(heads):
            for n in "qkv":
                tensors[f"layers.{l}.attn.{n}.weight"] = torch.cat([getattr(h, n).weight.detach() for h in heads]).contiguous()
            tensors[f"layers.{l}.attn.o.weight"] = torch.cat([h.o.weight.detach() for h in heads], dim=1).contiguous()
            att = {"encoding": None, "score_scale": 1.0, "length_scale": "none", "bias": False,
                   "heads": [{"attention": "hard_unique", "mask": _HARD_MASKS[h.mask], "tie": h.tie,
                              "d_qk": h.q.out_features, "d_v": h.v.out_features} for h in heads]}
        layers.append({"attention": att, "ffn": None if ffn is None else _ffn(tensors, l, ffn[0], ffn[2], "relu")})
    _linear(tensors, "readout", model.readout)
    absolute = None if model.encoding is None else _encoding(model.encoding, n_lags=n_lags, name="", tensors=tensors)
    config = {"dtype": model.dtype_name, "d_model": model.d_model, "norm": "none", "final_norm": False,
              "vocabulary": {"letters": list(model.program.alphabet), "framing": "word", "pad": None, "bos": None, "eos": None,
                             "first_letter": 0},
              "encodings": [], "absolute_encoding": absolute, "layers": layers,
              "readout": {"position": "last", "threshold": 0.0, "bias": True, "empty_word": bool(model.program.empty_accept),
                          "rule": "accept iff readout(state at the last letter) > threshold; the empty word by empty_word"}}
    return config, tensors


def _recognizer(model: Any, n_lags: int) -> tuple[dict, dict]:
    cfg = model.config
    if getattr(cfg, "outputs", 1) != 1:
        raise InputError(f"a model with {cfg.outputs} outputs (a state-prediction head) has no portable form: "
                         "the portable format carries one accept logit", field="model")
    tensors: dict[str, torch.Tensor] = {"embed.weight": model.embedding.weight.detach()}
    enc = model.encoding
    if enc.kind not in ("none", "absolute", "rotary", "bias", "rotary_bias"):
        raise InputError(f"encoding family {enc.family!r} ({enc.kind}) has no portable form", field="encoding")
    absolute = _encoding(enc, n_lags=n_lags, name="absolute_encoding.table", tensors=tensors) if enc.kind == "absolute" else None
    encs: list = []
    per_layer = enc.family == "pj_bias" and getattr(enc, "layers", 1) > 1
    if enc.kind in ("rotary", "bias", "rotary_bias") and not per_layer:
        encs.append(_encoding(enc, n_lags=n_lags, name="encodings.0.table", tensors=tensors))
    layers = []
    for l, block in enumerate(model.layers):
        e = None
        if per_layer:
            H = enc.heads_per_layer
            encs.append(_encoding(enc, layer_rows=slice(l * H, (l + 1) * H), n_lags=n_lags, name=f"encodings.{l}.table", tensors=tensors))
            e = l
        elif encs:
            e = 0
        attn = block.attn
        for n, lin in (("q", attn.q_proj), ("k", attn.k_proj), ("v", attn.v_proj), ("o", attn.out_proj)):
            _linear(tensors, f"layers.{l}.attn.{n}", lin)
        kind = "soft" if attn.attention == "soft" else "hard_unique"
        att = {"encoding": e, "score_scale": attn.score_scale, "length_scale": attn.length_scale, "bias": cfg.bias,
               "heads": [{"attention": kind, "mask": _SOFT_MASKS[attn.mask], "tie": attn.tie if kind == "hard_unique" else None,
                          "d_qk": attn.d_head, "d_v": attn.d_head} for _ in range(attn.n_heads)]}
        if getattr(attn, "score_grid", None) is not None:  # trained hard attention: the choice on scores rounded to 1/grid
            att["score_grid"] = attn.score_grid
        if cfg.norm != "none":
            _linear(tensors, f"layers.{l}.ln1", block.ln1)
            _linear(tensors, f"layers.{l}.ln2", block.ln2)
        layers.append({"attention": att, "ffn": _ffn(tensors, l, block.ff.fc1, block.ff.fc2, cfg.activation)})
    if cfg.norm == "pre":
        _linear(tensors, "final_norm", model.final_norm)
    _linear(tensors, "readout", model.readout)
    config = {"dtype": cfg.dtype, "d_model": cfg.d_model, "norm": cfg.norm, "final_norm": cfg.norm == "pre",
              "layer_norm_eps": cfg.layer_norm_eps,
              "vocabulary": {"letters": list(cfg.alphabet), "framing": "bos_word_eos", "pad": 0, "bos": 1, "eos": 2, "first_letter": 3},
              "encodings": encs, "absolute_encoding": absolute, "layers": layers,
              "readout": {"position": "eos", "threshold": 0.0, "bias": cfg.bias, "empty_word": None,
                          "rule": "accept iff readout(final state at EOS) > threshold"}}
    if getattr(cfg, "readout", "eos") == "last":  # the causal setting: BOS w, the decision at the last position
        config["vocabulary"].update(framing="bos_word", eos=None)
        config["readout"].update(position="last", rule="accept iff readout(final state at the last position: the last "
                                                        "letter, BOS for the empty word) > threshold")
    return config, tensors


def _counting(model: Any) -> tuple[dict, dict]:
    """A :class:`~langclass.models.construct.counting.CountingTransformer`. Its heads have zero queries
    and keys (every score 0, so softmax weighs the i + 1 visible positions by 1/(i + 1)): they are
    written as ``soft_uniform`` heads with ``d_qk`` 0, after checking that the weights are zero."""
    plan = model.plan
    tensors: dict[str, torch.Tensor] = {"embed.weight": model.embed.weight.detach()}
    layers = []
    for l, (attn, norm, ffn, has) in enumerate(zip(model.attn, model.norms, model.ffns, model.has_attention)):
        att = pair = None
        if has:
            if attn.attention != "soft" or attn.impl != "exact" or attn.mask != "nonstrict" or attn.n_heads != 1 or attn.length_scale != "none" \
                    or any(bool(t.detach().any()) for lin in (attn.q_proj, attn.k_proj) for t in (lin.weight, lin.bias)):
                raise InputError(f"layer {l} of the counting model is not one uniform soft head with a non-strict mask "
                                 "(zero queries and keys)", field="model")
            m = attn.v_proj.out_features
            for n, lin in (("q", attn.q_proj), ("k", attn.k_proj)):  # [0, d_model] and [0]: no query/key dimensions
                _linear(tensors, f"layers.{l}.attn.{n}", None, lin.weight.detach()[:0], lin.bias.detach()[:0])
            _linear(tensors, f"layers.{l}.attn.v", attn.v_proj)
            _linear(tensors, f"layers.{l}.attn.o", attn.out_proj)
            att = {"encoding": None, "score_scale": 1.0, "length_scale": "none", "bias": True,
                   "heads": [{"attention": "soft_uniform", "mask": "causal_nonstrict", "tie": None, "d_qk": 0, "d_v": m,
                              "role": "count"}]}
            coords = norm.idx.reshape(-1, 2)[:, 0].tolist()
            pair = {"coords": [int(c) for c in coords], "epsilon": float(norm.eps),
                    "op": "layer_norm_pairs", "channels": [f"{ch.op}:{ch.part}" for ch in plan.layers[l].channels]}
        ff = None if isinstance(ffn, torch.nn.Identity) else _ffn(tensors, l, ffn[0], ffn[2], "relu")
        layers.append({"attention": att, "pair_norm": pair, "ffn": ff})
    _linear(tensors, "readout", model.readout)
    config = {"dtype": model.dtype_name, "d_model": plan.d_model, "norm": "none", "final_norm": False,
              "vocabulary": {"letters": list(plan.alphabet), "framing": "bos_word", "pad": 0, "bos": 1, "eos": None, "first_letter": 3},
              "encodings": [], "absolute_encoding": None, "layers": layers,
              "readout": {"position": "last", "threshold": 0.0, "bias": True, "empty_word": None,
                          "rule": "accept iff readout(state at the last position: the last letter, BOS for the empty word) > threshold"}}
    return config, tensors


def portable_parts(model: Any, provenance: Mapping[str, Any] | None = None, *, n_lags: int = DEFAULT_LAG_TOKENS) -> tuple[dict, dict]:
    """``(config, tensors)`` of a model: the JSON config (digests included) and ``{name: tensor}``.

    Args:
        model: a FormulaTransformer, BraspTransformer, Recognizer or CountingTransformer.
        provenance: language, class, theorem, route, verification … (stored under ``provenance``).
        n_lags: the lag-table length of a ``pj_bias`` kernel (sequences up to this many tokens).

    Raises:
        InputError: a model or encoding with no portable form.
    """
    kind = type(model).__name__
    if kind == "FormulaTransformer":
        config, tensors = _formula(model, n_lags)
    elif kind == "BraspTransformer":
        config, tensors = _brasp(model, n_lags)
    elif kind == "Recognizer":
        config, tensors = _recognizer(model, n_lags)
    elif kind == "CountingTransformer":
        config, tensors = _counting(model)
    else:
        raise InputError(f"a {kind} has no portable form (FormulaTransformer, BraspTransformer, Recognizer or "
                         "CountingTransformer)", field="model")
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    model_params = sum(v.numel() for k, v in tensors.items() if not k.startswith("encodings."))
    grid = any((layer.get("attention") or {}).get("score_grid") is not None for layer in config.get("layers", ()))
    config = {"format": R.FORMAT if grid else R.FORMATS[0], **config, "parameters": model_params,
              "provenance": {"code_version": code_version(), "model_class": kind, **dict(provenance or {})}}
    config = json.loads(R.canonical_json(config))  # plain JSON (tuples → lists), the text the digest is taken of
    return config, tensors


def model_files(model: Any, provenance: Mapping[str, Any] | None = None, *, n_lags: int = DEFAULT_LAG_TOKENS) -> dict[str, bytes]:
    """The three files of a download: ``{config.json, model.safetensors, langclass_runner.py}`` as bytes.

    The config carries ``digests.tensors_sha256`` (SHA-256 of the tensor bytes) and the weights'
    header metadata ``config_sha256`` (SHA-256 of the canonical config without ``digests``), so the
    runner refuses either file once changed alone."""
    config, tensors = portable_parts(model, provenance, n_lags=n_lags)
    config_digest = hashlib.sha256(R.canonical_json(config).encode()).hexdigest()
    blob = st_save(tensors, metadata={"format": config["format"], "config_sha256": config_digest})
    n = int.from_bytes(blob[:8], "little")
    config["digests"] = {"tensors_sha256": hashlib.sha256(blob[8 + n:]).hexdigest(), "config_sha256": config_digest}
    text = json.dumps(config, indent=1, ensure_ascii=False, allow_nan=False).encode()
    with open(R.__file__, "rb") as fh:
        runner = fh.read()
    return {R.CONFIG_FILE: text, R.WEIGHTS_FILE: blob, RUNNER_NAME: runner}


def save_model(model: Any, directory: str | os.PathLike, provenance: Mapping[str, Any] | None = None, *,
               n_lags: int = DEFAULT_LAG_TOKENS) -> dict[str, Any]:
    """Write ``config.json``, ``model.safetensors`` and ``langclass_runner.py`` into ``directory``
    (created if missing); returns :func:`summary_of` the config."""
    files = model_files(model, provenance, n_lags=n_lags)
    os.makedirs(directory, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as fh:
            fh.write(data)
    return summary_of(json.loads(files[R.CONFIG_FILE]))


def zip_models(entries: Mapping[str, dict[str, bytes]]) -> bytes:
    """One zip of several models: ``{folder: model_files(...)}`` → ``folder/config.json`` … and one
    ``langclass_runner.py`` at the top (folder ``""`` puts a single model at the top)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        runner = None
        for folder, files in entries.items():
            for name, data in files.items():
                if name == RUNNER_NAME:
                    runner = data
                    continue
                zf.writestr(f"{folder}/{name}" if folder else name, data)
        if runner is not None:
            zf.writestr(RUNNER_NAME, runner)
    return buf.getvalue()


def summary_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The model's summary for pages and records: layers, heads, d_model, parameters, attention kinds,
    masks, encodings, route and verification (from the provenance)."""
    layers = config.get("layers", [])
    heads = [h for layer in layers if layer.get("attention") for h in layer["attention"]["heads"]]
    prov = config.get("provenance", {})
    encs = [e["family"] for e in config.get("encodings", []) if e] + (
        [config["absolute_encoding"]["family"]] if config.get("absolute_encoding") else [])
    return {"format": config.get("format"), "layers": len(layers), "heads": len(heads), "d_model": config.get("d_model"),
            "parameters": config.get("parameters"), "dtype": config.get("dtype"),
            "attention": sorted({h["attention"] for h in heads}), "masks": sorted({h["mask"] for h in heads}),
            "encodings": sorted(set(encs)) or ["nope"], "route": prov.get("route"), "verification": prov.get("verification"),
            "theorem": prov.get("theorem")}
