"""langclass portable model runner: load ``config.json`` + ``model.safetensors`` and classify words.

Standalone on purpose: it imports only the standard library, torch and safetensors (never ``langclass``), and
every download of a model ships this file as ``langclass_runner.py``. The format (``langclass.portable/1``, and
``/2`` when attention carries ``score_grid``) is documented in langclass's docs/models.md; in short the config
states the vocabulary and framing (``BOS w EOS``, ``BOS w`` or the bare word), the residual width, every layer
(attention heads with their kind — ``soft``, ``soft_uniform``, ``hard_unique`` with a tie rule — and mask —
``causal_strict`` j < i, ``causal_nonstrict`` j <= i, ``anticausal_strict`` j > i, ``anticausal_nonstrict``
j >= i, ``none``), C-RASP's ``pair_norm``, the positional encodings as data (periodic tables are tables, never
angle × position), the readout position and threshold, the provenance.

Usage::

    python langclass_runner.py MODEL_DIR abba ab ""        # one line per word: word, logit, accept
    python -c "import langclass_runner as r; m = r.load('MODEL_DIR'); print(m.classify(['ab']))"

Loading never executes anything from the files: the config is JSON checked field by field, the weights are read
by safetensors (no pickle) after their header was checked against the config (names, shapes, dtypes, offsets
covering the file exactly), both digests are compared, and the parameter count must stay under
``max_parameters``. Every refusal is a :class:`ModelFileError` subclass naming the problem.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F
from torch import nn

FORMAT = "langclass.portable/2"  # /2: attention may carry score_grid; a model without one is written as /1
FORMATS = ("langclass.portable/1", FORMAT)
CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
MAX_CONFIG_BYTES, MAX_PARAMETERS = 64 * 2 ** 20, 200_000_000
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
ST_DTYPES = {"F32": "float32", "F64": "float64", "BF16": "bfloat16", "F16": "float16"}
MASKS = ("causal_strict", "causal_nonstrict", "anticausal_strict", "anticausal_nonstrict", "none")
ATTENTIONS = ("soft", "soft_uniform", "hard_unique")
TIES = ("leftmost", "rightmost")
USAGE = ("usage: python langclass_runner.py MODEL_DIR WORD...   (an empty argument is the empty word)\n"
         "   or: python langclass_runner.py MODEL_DIR < words.txt  (one word a line on stdin; an empty line: the empty word)")


class ModelFileError(ValueError):
    """A model file is malformed, inconsistent or over a limit (the message names what and where)."""


class ConfigError(ModelFileError):
    """config.json is not a valid ``langclass.portable`` config."""


class WeightsError(ModelFileError):
    """model.safetensors is truncated, malformed, or its tensors do not match the config."""


class DigestError(ModelFileError):
    """A file was changed after it was saved: a recorded SHA-256 does not match."""


class LimitError(ModelFileError):
    """The model or the input exceeds a limit (parameters, sizes, lag table length)."""


def canonical_json(obj) -> str:
    """Sorted keys, no whitespace, UTF-8, no NaN: the text the config digest is taken of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _bad(path: str, msg: str) -> ConfigError:
    return ConfigError(f"config.{path}: {msg}")


def _get(d, key: str, path: str, kind, *, optional: bool = False, choices=None, lo=None, hi=None):
    if not isinstance(d, dict):
        raise _bad(path, "must be an object")
    if key not in d or d[key] is None:
        if optional:
            return None
        raise _bad(f"{path}.{key}", "is required")
    v = d[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise _bad(f"{path}.{key}", f"must be an integer, got {v!r}"[:200])
    if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
        raise _bad(f"{path}.{key}", "must be a finite number")
    if kind in (str, bool, list, dict) and not isinstance(v, kind):
        raise _bad(f"{path}.{key}", f"must be a {kind.__name__}")
    if choices is not None and v not in choices:
        raise _bad(f"{path}.{key}", f"must be one of {list(choices)}, got {v!r}"[:200])
    if lo is not None and v < lo or hi is not None and v > hi:
        raise _bad(f"{path}.{key}", f"must lie in [{lo}, {hi}], got {v}")
    return float(v) if kind is float else v


def _floats(v, path: str, n: int | None = None) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n) or len(v) > 10 ** 7:
        raise _bad(path, f"must be a list of {n if n is not None else 'some'} numbers")
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise _bad(path, "must hold finite numbers only")
    return [float(x) for x in v]


# ------------------------------------------------------------------------------------------ encodings
class Encoding:
    """One positional encoding read from the config (``kind``: none, absolute, rotary, bias)."""

    def __init__(self, spec, path: str, tensors_wanted: dict, model_dtype: str) -> None:
        self.kind = _get(spec, "kind", path, str, choices=("none", "absolute", "rotary", "bias"))
        self.family = _get(spec, "family", path, str)
        self.origin = _get(spec, "position_origin", path, int, lo=0, hi=10 ** 9)
        self.cdt = DTYPES[_get(spec, "compute_dtype", path, str, choices=("float32", "float64"))]
        self.path, self.tensors, self.tensor_name, self.slopes = path, {}, None, None
        if self.kind == "absolute":
            self.d_model = _get(spec, "d_model", path, int, lo=1, hi=2 ** 20)
            self.form = _get(spec, "form", path, str, choices=("sinusoidal", "periodic_tables", "learned_table"))
            self.table_dtype = DTYPES[_get(spec, "table_dtype", path, str, choices=("float32", "float64"))]
            if self.form == "learned_table":  # one row per position: rows [max_positions, d_model], in table_dtype
                self.n_rows, self.tensor_name = _get(spec, "max_positions", path, int, lo=1, hi=10 ** 6), _get(spec, "tensor", path, str)
                tensors_wanted[self.tensor_name] = ((self.n_rows, self.d_model), _get(spec, "table_dtype", path, str))
            elif self.form == "sinusoidal":
                self.dim = _get(spec, "dim", path, int, lo=0, hi=self.d_model)
                self.inv_freq = torch.tensor(_floats(spec.get("inv_freq"), path + ".inv_freq", self.dim // 2), dtype=self.cdt)
            else:
                self.components = []
                comps = _get(spec, "components", path, list)
                if len(comps) > 100_000:
                    raise LimitError(f"{path}: more than 100000 components")
                for c, comp in enumerate(comps):
                    p = f"{path}.components[{c}]"
                    m = _get(comp, "period", p, int, lo=1, hi=10 ** 6)
                    ch = _get(comp, "channels", p, list)
                    if not ch or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < self.d_model for x in ch):
                        raise _bad(p + ".channels", f"must list channels in 0..{self.d_model - 1}")
                    rows = _get(comp, "table", p, list)
                    if len(rows) != m:
                        raise _bad(p + ".table", f"must have one row per residue ({m})")
                    tab = torch.tensor([_floats(r, p + ".table", len(ch)) for r in rows], dtype=torch.float64).to(self.table_dtype)
                    self.components.append((m, torch.tensor(ch, dtype=torch.long), tab))
        elif self.kind == "rotary":
            self.d_head = _get(spec, "d_head", path, int, lo=1, hi=2 ** 16)
            self.rotary_dim = _get(spec, "rotary_dim", path, int, lo=0, hi=self.d_head)
            self.layout = _get(spec, "pair_layout", path, str, choices=("interleaved", "half_split"))
            self.out_rule = _get(spec, "output_dtype", path, str, choices=("model", "compute_if_half"))
            self.scores_fp32 = _get(spec, "scores_in_fp32", path, bool)
            if self.rotary_dim % 2:
                raise _bad(path + ".rotary_dim", "must be even")
            n = self.rotary_dim // 2
            if "inv_freq" in spec:
                self.inv_freq, self.tables = torch.tensor(_floats(spec["inv_freq"], path + ".inv_freq", n), dtype=self.cdt), None
            else:
                periods = _get(spec, "periods", path, list)
                if len(periods) != n or any(isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 10 ** 6 for m in periods):
                    raise _bad(path + ".periods", f"must list {n} periods in 1..10^6")
                cos, sin = _get(spec, "cos_table", path, list), _get(spec, "sin_table", path, list)
                if len(cos) != n or len(sin) != n:
                    raise _bad(path + ".cos_table", f"needs one row per rotary pair ({n})")
                ct, st = (torch.zeros(n, max(periods, default=1), dtype=torch.float64) for _ in "cs")
                for d, m in enumerate(periods):
                    for tab, rows, name in ((ct, cos, "cos_table"), (st, sin, "sin_table")):
                        tab[d, :m] = torch.tensor(_floats(rows[d], f"{path}.{name}[{d}]", m), dtype=torch.float64)
                self.tables = (ct.to(self.cdt), st.to(self.cdt), torch.tensor(periods, dtype=torch.long))
            self.jet = None
            if (jet := spec.get("jet")) is not None:
                order = _get(jet, "order", path + ".jet", int, lo=1, hi=8)
                eps = _get(jet, "epsilon", path + ".jet", float)
                if self.rotary_dim % (2 * order) or self.layout != "interleaved":
                    raise _bad(path + ".jet", "needs rotary_dim a multiple of 2·order and the interleaved layout")
                self.jet = (order, eps)
            if spec.get("slopes") is not None:  # learned recency slopes beside the rotation (recency_periodic)
                self.n_heads = _get(spec, "n_heads", path, int, lo=1, hi=4096)
                self.slopes = torch.tensor(_floats(spec["slopes"], path + ".slopes", self.n_heads), dtype=self.cdt)
        elif self.kind == "bias":
            self.form = _get(spec, "form", path, str, choices=("alibi", "lag_table"))
            self.n_heads = _get(spec, "n_heads", path, int, lo=1, hi=4096)
            if self.form == "alibi":
                self.slopes = torch.tensor(_floats(spec.get("slopes"), path + ".slopes", self.n_heads), dtype=self.cdt)
            else:
                self.n_lags = _get(spec, "n_lags", path, int, lo=1, hi=10 ** 6)
                self.tensor_name = _get(spec, "tensor", path, str)
                tensors_wanted[self.tensor_name] = ((self.n_heads, self.n_lags), _get(spec, "compute_dtype", path, str))

    def positions(self, T: int, device=None) -> torch.Tensor:
        return (torch.arange(T, dtype=torch.long, device=device) + self.origin).unsqueeze(0)  # [1, T]

    def embed(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        if self.kind != "absolute":
            return x
        if self.form == "sinusoidal":
            phase = pos.to(self.cdt)[..., None] * self.inv_freq.to(pos.device)
            pe = torch.zeros(*pos.shape, self.d_model, dtype=self.cdt, device=pos.device)
            pe[..., 0:self.dim:2] = torch.sin(phase.double()).to(self.cdt)
            pe[..., 1:self.dim:2] = torch.cos(phase.double()).to(self.cdt)
        elif self.form == "learned_table":
            if pos.numel() and int(pos.max()) >= self.n_rows:
                raise LimitError(f"{self.path}: this model's learned table has rows for positions below {self.n_rows} only")
            return x + self.tensors["table"][pos].to(x.dtype)
        else:
            pe = torch.zeros(*pos.shape, self.d_model, dtype=self.table_dtype, device=pos.device)
            for m, ch, tab in self.components:
                pe[..., ch.to(pos.device)] = tab.to(pos.device)[pos % m]
        return x + pe.to(x.dtype)

    def _cos_sin(self, pos: torch.Tensor):
        if self.tables is not None:
            ct, st, periods = (t.to(pos.device) for t in self.tables)
            idx = pos[..., None] % periods
            pair = torch.arange(ct.shape[0], device=pos.device)
            return ct[pair, idx], st[pair, idx]
        ph = (pos.to(self.cdt)[..., None] * self.inv_freq.to(pos.device)).double()
        return torch.cos(ph).to(self.cdt), torch.sin(ph).to(self.cdt)

    def _apply(self, x: torch.Tensor, pos: torch.Tensor, side: str) -> torch.Tensor:
        R = self.rotary_dim
        if R == 0:
            return x
        out = self.cdt if (self.out_rule == "compute_if_half" and x.dtype in (torch.float16, torch.bfloat16)) else x.dtype
        cos, sin = (t.unsqueeze(-3) for t in self._cos_sin(pos))  # [B, 1, T, R/2]
        y = x[..., :R].to(self.cdt)
        if self.jet is not None and self.jet[0] > 1 and self.jet[1] != 0.0:
            m, eps = self.jet
            t = pos.to(self.cdt) * eps
            M = torch.zeros(*pos.shape, m, m, dtype=self.cdt, device=pos.device)
            for r in range(m):
                for c in range(m):
                    k = c - r if side == "q" else r - c
                    if k >= 0:
                        M[..., r, c] = (t if side == "q" else -t).pow(k) / math.factorial(k) if k else 1.0
            shape = y.shape
            y = torch.matmul(M.unsqueeze(-4).unsqueeze(-3), y.reshape(*shape[:-1], R // (2 * m), m, 2)).reshape(shape)
        if self.layout == "interleaved":
            a, b = y[..., 0::2], y[..., 1::2]
            rot = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
        else:
            a, b = y[..., :R // 2], y[..., R // 2:]
            rot = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        rot = rot.to(out)
        return rot if R == self.d_head else torch.cat((rot, x[..., R:].to(out)), dim=-1)

    def rotate(self, q, k, pos):
        if self.kind != "rotary":
            return q, k
        return self._apply(q, pos, "q"), self._apply(k, pos, "k")

    def score_bias(self, pos: torch.Tensor):
        if self.kind != "bias" and self.slopes is None:
            return None
        lag = pos[..., :, None] - pos[..., None, :]  # [1, T, T]
        if self.slopes is not None:  # ALiBi, or recency slopes of a rotary encoding
            return -self.slopes.to(pos.device)[:, None, None] * lag.abs().to(self.slopes.dtype).unsqueeze(-3)
        if int(lag.max()) >= self.n_lags:
            raise LimitError(f"{self.path}: this model's lag table covers sequences of at most {self.n_lags} tokens")
        table = self.tensors["table"]
        return table[:, lag.clamp(min=0)].masked_fill((lag < 0).unsqueeze(0), 0.0).transpose(0, 1)


# ------------------------------------------------------------------------------------------- the model
def _visible(T: int, mask: str, valid: torch.Tensor) -> torch.Tensor:
    i = torch.arange(T, device=valid.device)[:, None]
    j = torch.arange(T, device=valid.device)[None, :]
    vis = {"causal_strict": j < i, "causal_nonstrict": j <= i, "anticausal_strict": j > i,
           "anticausal_nonstrict": j >= i, "none": torch.ones(T, T, dtype=torch.bool, device=valid.device)}[mask]
    return vis[None, None] & valid[:, None, None, :]  # [B, 1, T, T]


def _weights(scores: torch.Tensor, vis: torch.Tensor, attention: str, tie: str | None, grid: float | None = None) -> torch.Tensor:
    has_key = vis.any(dim=-1, keepdim=True)
    if attention == "soft":
        w = torch.softmax(scores.masked_fill(~(vis | ~has_key), float("-inf")), dim=-1)
        return w * has_key.to(w.dtype)
    if attention == "soft_uniform":  # the mean of the visible values (C-RASP counting attention): 1/n rounded once,
        v = torch.broadcast_to(vis, scores.shape).to(torch.promote_types(scores.dtype, torch.float32))  # as softmax
        return (v / v.sum(dim=-1, keepdim=True).clamp(min=1)).to(scores.dtype)
    vis = torch.broadcast_to(vis, scores.shape)
    scores = scores if grid is None else torch.round(scores * grid) / grid  # hard choice on scores rounded to 1/grid
    masked = torch.where(vis, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device))
    best = (masked == masked.amax(dim=-1, keepdim=True)) & vis
    T = scores.shape[-1]
    idx = torch.arange(T, device=scores.device)
    choice = (torch.where(best, idx, T).amin(dim=-1, keepdim=True) if tie == "leftmost"
              else torch.where(best, idx, -1).amax(dim=-1, keepdim=True))
    return ((idx == choice) & vis.any(dim=-1, keepdim=True)).to(scores.dtype)


def _pair_norm(pn: dict, x: torch.Tensor) -> torch.Tensor:
    """Layer normalization (no affine map) of each coordinate pair (c, c + 1): (z, −z) ↦ (z, −z)/|z|."""
    idx = pn["index"].to(x.device)
    return x.index_copy(-1, idx, F.layer_norm(x[..., idx].unflatten(-1, (-1, 2)), (2,), eps=pn["epsilon"]).flatten(-2))


class PortableTransformer(nn.Module):
    """A transformer recognizer rebuilt from a ``langclass.portable`` config and its tensors.

    ``forward(ids int64 [batch, seq], valid bool [batch, seq])`` → accept logits ``[batch]`` (float32;
    float64 for float64 models) read at each row's readout position; :meth:`classify` and
    :meth:`logits` take words (strings of one-character letters, or lists of letters).
    Attributes: ``config`` (the parsed JSON), ``alphabet``, ``threshold``.
    """

    def __init__(self, config: dict, tensors: dict) -> None:
        super().__init__()
        self.config = config
        self.spec = _check_config(config)
        s = self.spec
        self.alphabet = s["letters"]
        self.threshold = s["threshold"]
        self.params = nn.ParameterDict({k.replace(".", "/"): nn.Parameter(v, requires_grad=False) for k, v in tensors.items()})

    def t(self, name: str):
        return self.params[name.replace(".", "/")] if name.replace(".", "/") in self.params else None

    def _attention(self, l: int, att: dict, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        enc = self.spec["encodings"][att["encoding"]] if att["encoding"] is not None else None
        if enc is not None:  # a lag table: the parameter, wherever the module was moved
            enc.tensors["table"] = self.t(enc.tensor_name or "")
        p = f"layers.{l}.attn."
        q, k, v = (F.linear(x, self.t(p + n + ".weight"), self.t(p + n + ".bias")) for n in "qkv")
        heads = att["heads"]
        pos = enc.positions(T, x.device) if enc is not None else torch.arange(T, device=x.device).unsqueeze(0)
        kinds = {(h["attention"], h["mask"], h["tie"], h["d_qk"], h["d_v"]) for h in heads}
        groups = [list(range(len(heads)))] if len(kinds) == 1 else [[h] for h in range(len(heads))]
        qs, ks, vs = (torch.split(t, [h[d] for h in heads], dim=-1) for t, d in ((q, "d_qk"), (k, "d_qk"), (v, "d_v")))
        outs = []
        for g in groups:
            hd = heads[g[0]]
            if len(g) == len(heads):  # one group: the [B, T, H, d] → [B, H, T, d] views of a fused projection
                qh, kh = (t.view(B, T, len(g), hd["d_qk"]).transpose(1, 2) for t in (q, k))
                vh = v.view(B, T, len(g), hd["d_v"]).transpose(1, 2)
            else:
                qh, kh, vh = qs[g[0]][:, None], ks[g[0]][:, None], vs[g[0]][:, None]  # [B, 1, T, d]
            bias = None
            if enc is not None:
                qh, kh = enc.rotate(qh, kh, pos)
                bias = enc.score_bias(pos)
                if bias is not None and len(g) != len(heads):
                    bias = bias[:, g]
            vis = _visible(T, hd["mask"], valid)
            if enc is not None and enc.kind == "rotary" and enc.scores_fp32:
                wide = torch.promote_types(torch.promote_types(qh.dtype, kh.dtype), torch.float32)
                scores = torch.matmul(qh.to(wide), kh.to(wide).transpose(-2, -1))
            else:
                scores = torch.matmul(qh, kh.transpose(-2, -1))
            if att["score_scale"] != 1.0:
                scores = scores * att["score_scale"]
            if bias is not None:
                scores = scores + bias.to(scores.dtype)
            if att["length_scale"] == "log":
                n = vis.sum(dim=-1, keepdim=True).clamp(min=1)
                scores = scores * torch.log(n.to(torch.float32)).to(scores.dtype)
            w = _weights(scores, vis, hd["attention"], hd["tie"], att["score_grid"])
            outs.append(torch.matmul(w.to(vh.dtype), vh).transpose(1, 2).reshape(B, T, -1))
        return F.linear(torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0], self.t(p + "o.weight"), self.t(p + "o.bias"))

    def _norm(self, name: str, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.t(name + ".weight"), self.t(name + ".bias"), self.spec["eps"])

    def _ffn(self, l: int, ff: dict, x: torch.Tensor) -> torch.Tensor:
        p = f"layers.{l}.ffn."
        h = (F.relu if ff["activation"] == "relu" else F.gelu)(F.linear(x, self.t(p + "fc1.weight"), self.t(p + "fc1.bias")))
        return F.linear(h, self.t(p + "fc2.weight"), self.t(p + "fc2.bias"))

    def hidden(self, ids: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """The residual stream after the last layer (and the final norm) ``[batch, seq, d_model]``."""
        s = self.spec
        B, T = ids.shape
        x = F.embedding(ids, self.t("embed.weight"))
        absolute = s["absolute"]
        if absolute is not None:
            absolute.tensors["table"] = self.t(absolute.tensor_name or "")  # a learned table
            x = absolute.embed(x, absolute.positions(T, ids.device))
        norm = s["norm"]
        for l, layer in enumerate(s["layers"]):
            att, ff = layer["attention"], layer["ffn"]
            if norm == "post":
                x = self._norm(f"layers.{l}.ln1", x + self._attention(l, att, x, valid))
                x = self._norm(f"layers.{l}.ln2", x + self._ffn(l, ff, x))
                continue
            if att is not None:
                x = x + self._attention(l, att, self._norm(f"layers.{l}.ln1", x) if norm == "pre" else x, valid)
                x = x if layer["pair_norm"] is None else _pair_norm(layer["pair_norm"], x)
            if ff is not None:
                x = x + self._ffn(l, ff, self._norm(f"layers.{l}.ln2", x) if norm == "pre" else x)
        return self._norm("final_norm", x) if s["final_norm"] else x

    def forward(self, ids: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        x = self.hidden(ids, valid)
        at = valid.long().sum(dim=1) - 1  # the last valid position: EOS, or the last letter
        out = F.linear(x[torch.arange(ids.shape[0], device=ids.device), at], self.t("readout.weight"), self.t("readout.bias"))[:, 0]
        return out if out.dtype == torch.float64 else out.float()

    def encode(self, words) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ``ids int64 [batch, seq]`` and ``valid bool [batch, seq]`` of the words (framing of the config)."""
        s = self.spec
        index = {a: i + s["first_letter"] for i, a in enumerate(self.alphabet)}
        rows = []
        for w in words:
            try:
                body = [index[a] for a in w]
            except (KeyError, TypeError):
                raise ValueError(f"word {w!r} has a letter outside the alphabet {self.alphabet}") from None
            rows.append({"bos_word_eos": [s["bos"], *body, s["eos"]], "bos_word": [s["bos"], *body]}.get(s["framing"], body))
        T = max([len(r) for r in rows] + [1])
        ids = torch.zeros(len(rows), T, dtype=torch.long)
        valid = torch.zeros(len(rows), T, dtype=torch.bool)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = torch.tensor(row, dtype=torch.long)
            valid[r, :len(row)] = True
        return ids, valid

    @torch.no_grad()
    def logits(self, words, batch_size: int = 64, max_scores: int = 2 ** 22) -> torch.Tensor:
        """Accept logits ``[len(words)]``. Under the ``word`` framing (only) the empty word has no position:
        its logit is threshold ± 1 by the config's ``readout.empty_word`` declaration."""
        words = list(words)
        out = torch.zeros(len(words), dtype=torch.float64)
        order = sorted(range(len(words)), key=lambda i: len(words[i]))
        s = self.spec
        todo = [i for i in order if len(words[i]) or s["framing"] != "word"]
        for i in set(order) - set(todo):  # the empty word under the word framing (a set: linear in len(words))
            out[i] = self.threshold + (1.0 if s["empty_word"] else -1.0)
        b = 0
        while b < len(todo):  # rows of similar length, at most max_scores score entries per head
            T = len(words[todo[min(len(todo), b + batch_size) - 1]]) + 2
            idx = todo[b:b + max(1, min(batch_size, max_scores // (T * T)))]
            ids, valid = self.encode([words[i] for i in idx])
            dev = self.t("embed.weight").device
            out[idx] = self.forward(ids.to(dev), valid.to(dev)).double().cpu()
            b += len(idx)
        return out

    def classify(self, words) -> list:
        """Accept decisions: logit > threshold."""
        return [bool(v > self.threshold) for v in self.logits(words).tolist()]


def _check_config(c) -> dict:
    """Every field of the config checked; returns the parsed form the model runs on."""
    if not isinstance(c, dict):
        raise ConfigError("config must be a JSON object")
    if c.get("format") not in FORMATS:
        raise _bad("format", f"must be one of {FORMATS}, got {c.get('format')!r}"[:200])
    dtype = _get(c, "dtype", "", str, choices=tuple(DTYPES))
    vocab = _get(c, "vocabulary", "", dict)
    letters = _get(vocab, "letters", "vocabulary", list)
    if not letters or len(letters) > 10_000 or any(not isinstance(a, str) or not a for a in letters) or len(set(letters)) != len(letters):
        raise _bad("vocabulary.letters", "must be a non-empty list of distinct non-empty strings")
    framing = _get(vocab, "framing", "vocabulary", str, choices=("bos_word_eos", "bos_word", "word"))
    first = _get(vocab, "first_letter", "vocabulary", int, lo=0, hi=3)
    bos = _get(vocab, "bos", "vocabulary", int, optional=framing == "word", lo=0, hi=2)
    eos = _get(vocab, "eos", "vocabulary", int, optional=framing != "bos_word_eos", lo=0, hi=2)
    D = _get(c, "d_model", "", int, lo=1, hi=2 ** 16)
    V = first + len(letters)
    want: dict = {"embed.weight": ((V, D), dtype)}
    norm = _get(c, "norm", "", str, choices=("pre", "post", "none"))
    eps = _get(c, "layer_norm_eps", "", float, optional=norm == "none", lo=0.0, hi=1.0)
    eps = 1e-5 if eps is None else eps
    wanted_enc: dict = {}
    if len(_get(c, "encodings", "", list)) > 4096:
        raise LimitError("more than 4096 encodings")
    encs = [Encoding(e, f"encodings[{i}]", wanted_enc, dtype) for i, e in enumerate(c["encodings"])]
    absolute = None
    if c.get("absolute_encoding") is not None:
        absolute = Encoding(c["absolute_encoding"], "absolute_encoding", wanted_enc, dtype)
        if absolute.kind != "absolute" or absolute.d_model != D:
            raise _bad("absolute_encoding", "must be an absolute encoding of width d_model")
    layers = []
    for l, layer in enumerate(_get(c, "layers", "", list)):
        if l >= 4096:
            raise LimitError("more than 4096 layers")
        p = f"layers[{l}]"
        att = _get(layer, "attention", p, dict, optional=True)
        ff = _get(layer, "ffn", p, dict, optional=True)
        if norm == "post" and (att is None or ff is None):
            raise _bad(p, "post-norm layers need attention and a feed-forward layer")
        if att is not None:
            pa = p + ".attention"
            e = _get(att, "encoding", pa, int, optional=True, lo=0, hi=len(encs) - 1)
            enc = encs[e] if e is not None else None
            heads = _get(att, "heads", pa, list)
            if not 1 <= len(heads) <= 4096:
                raise _bad(pa + ".heads", "must list 1 to 4096 heads")
            parsed = []
            for h, hd in enumerate(heads):
                ph = f"{pa}.heads[{h}]"
                kind = _get(hd, "attention", ph, str, choices=ATTENTIONS)
                parsed.append({"attention": kind, "mask": _get(hd, "mask", ph, str, choices=MASKS),
                               "tie": _get(hd, "tie", ph, str, choices=TIES, optional=kind != "hard_unique"),
                               "d_qk": _get(hd, "d_qk", ph, int, lo=0, hi=2 ** 16), "d_v": _get(hd, "d_v", ph, int, lo=1, hi=2 ** 16)})
            if enc is not None and enc.kind == "rotary" and any(h["d_qk"] != enc.d_head for h in parsed):
                raise _bad(pa, "a rotary encoding needs every head's d_qk equal to its d_head")
            if enc is not None and (enc.kind == "bias" or enc.slopes is not None) and enc.n_heads != len(parsed):
                raise _bad(pa, "a bias encoding needs one kernel per head")
            bias = _get(att, "bias", pa, bool)
            qk, dv = sum(h["d_qk"] for h in parsed), sum(h["d_v"] for h in parsed)
            want.update({f"layers.{l}.attn.{n}.{w}": ((r, c) if w == "weight" else (r,), dtype)
                         for n, r, c in (("q", qk, D), ("k", qk, D), ("v", dv, D), ("o", D, dv)) for w in ("weight", "bias")[:1 + bias]})
            att = {"encoding": e, "heads": parsed, "score_scale": _get(att, "score_scale", pa, float),
                   "length_scale": _get(att, "length_scale", pa, str, choices=("none", "log")),
                   "score_grid": _get(att, "score_grid", pa, float, optional=True, lo=2.0 ** -100, hi=2.0 ** 100)}
            if att["score_grid"] is not None and c["format"] == FORMATS[0]:
                raise _bad(pa + ".score_grid", f"needs format {FORMAT!r} (a /1 reader would ignore it)")
        if ff is not None:
            pf = p + ".ffn"
            H = _get(ff, "d_ff", pf, int, lo=1, hi=2 ** 24)
            bias = _get(ff, "bias", pf, bool)
            want.update({f"layers.{l}.ffn.{n}.{w}": ((r, c) if w == "weight" else (r,), dtype)
                         for n, r, c in (("fc1", H, D), ("fc2", D, H)) for w in ("weight", "bias")[:1 + bias]})
            ff = {"activation": _get(ff, "activation", pf, str, choices=("relu", "gelu"))}
        if norm != "none":
            want.update({f"layers.{l}.{n}.{w}": ((D,), dtype) for n in ("ln1", "ln2") for w in ("weight", "bias")})
        if (pn := _get(layer, "pair_norm", p, dict, optional=True)) is not None:  # x ← pair_norm(x + attn(x))
            cs, eps_p = _get(pn, "coords", p + ".pair_norm", list), _get(pn, "epsilon", p + ".pair_norm", float, lo=0.0, hi=1.0)
            if norm != "none" or att is None or not cs or any(type(c) is not int or not 0 <= c < D - 1 for c in cs) \
                    or len({*cs, *(c + 1 for c in cs)}) != 2 * len(cs):
                raise _bad(p + ".pair_norm", f"needs norm 'none', an attention sub-layer and coords: first coordinates in 0..{D - 2} of disjoint pairs (c, c + 1)")
            pn = {"index": torch.tensor([[c, c + 1] for c in cs], dtype=torch.long).reshape(-1), "epsilon": eps_p}
        layers.append({"attention": att, "ffn": ff, "pair_norm": pn})
    final_norm = _get(c, "final_norm", "", bool)
    if final_norm:
        want["final_norm.weight"] = want["final_norm.bias"] = ((D,), dtype)
    ro = _get(c, "readout", "", dict)
    position = _get(ro, "position", "readout", str, choices=("eos", "last"))
    if (position == "eos") != (framing == "bos_word_eos"):
        raise _bad("readout.position", "is 'eos' exactly when the framing is 'bos_word_eos'")
    want["readout.weight"] = ((1, D), dtype)
    if _get(ro, "bias", "readout", bool):
        want["readout.bias"] = ((1,), dtype)
    if clash := sorted(set(wanted_enc) & set(want)):
        raise _bad("encodings", f"name the model's own tensors {clash[:5]} as tables")
    want.update(wanted_enc)
    return {"dtype": dtype, "letters": tuple(letters), "framing": framing, "first_letter": first, "bos": bos, "eos": eos,
            "encodings": encs, "absolute": absolute, "layers": layers, "norm": norm, "eps": eps, "final_norm": final_norm,
            "threshold": _get(ro, "threshold", "readout", float), "empty_word": _get(ro, "empty_word", "readout", bool, optional=True),
            "tensors": want}


def _read_header(data: bytes) -> tuple[dict, dict]:
    """The safetensors header, checked: ``({name: (dtype, shape, begin, end)}, metadata)``."""
    if len(data) < 8:
        raise WeightsError("model.safetensors is truncated (no header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(len(data) - 8, 100 * 2 ** 20):
        raise WeightsError("model.safetensors is truncated or its header length is corrupt")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WeightsError("model.safetensors has a header that is not JSON") from None
    if not isinstance(header, dict):
        raise WeightsError("model.safetensors has a header that is not an object")
    meta = header.pop("__metadata__", None) or {}
    body = len(data) - 8 - n
    out, spans = {}, []
    for name, info in header.items():
        try:
            dt, shape, (b, e) = ST_DTYPES[info["dtype"]], [int(s) for s in info["shape"]], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise WeightsError(f"model.safetensors: tensor {name!r} has a dtype other than F32/F64/BF16/F16 or a bad entry") from None
        numel = math.prod(shape)
        if not (isinstance(b, int) and isinstance(e, int) and 0 <= b <= e <= body and e - b == numel * DTYPES[dt].itemsize):
            raise WeightsError(f"model.safetensors is truncated or corrupt: tensor {name!r} lies outside the file")
        out[name] = (dt, tuple(shape), b, e)
        spans.append((b, e))
    spans.sort()
    if sum(e - b for b, e in spans) != body or any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
        raise WeightsError("model.safetensors is truncated or has bytes no tensor covers")
    return out, meta


def _sha256(path: str, limit: int) -> tuple[bytes, str]:
    size = os.path.getsize(path)
    if size > limit:
        raise LimitError(f"{os.path.basename(path)} is {size} bytes, over the limit of {limit}")
    with open(path, "rb") as fh:
        data = fh.read()
    return data, hashlib.sha256(data).hexdigest()


def load(directory: str, *, max_parameters: int = MAX_PARAMETERS, verify_digests: bool = True) -> PortableTransformer:
    """Load ``config.json`` and ``model.safetensors`` from ``directory``.

    Raises:
        ConfigError, WeightsError, DigestError, LimitError (all :class:`ModelFileError`): what is wrong.
        FileNotFoundError: a file is missing (in a train download's top folder: names its models).
    """
    if os.path.isdir(directory) and not os.path.exists(os.path.join(directory, CONFIG_FILE)) and (subs := sorted(
            d for d in os.listdir(directory) if os.path.isfile(os.path.join(directory, d, CONFIG_FILE)))):
        raise FileNotFoundError(f"{directory} holds one model per folder; run one of: {', '.join(subs)}")
    text, _ = _sha256(os.path.join(directory, CONFIG_FILE), MAX_CONFIG_BYTES)

    def no_constant(name):
        raise ConfigError(f"config.json holds {name}, which JSON does not allow")
    try:
        config = json.loads(text.decode("utf-8"), parse_constant=no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"config.json is not JSON: {exc}") from None
    except RecursionError:
        raise ConfigError("config.json nests too deeply") from None
    spec = _check_config(config)
    want = spec["tensors"]
    n_params = sum(math.prod(shape) for shape, _ in want.values())
    if n_params > max_parameters:
        raise LimitError(f"the config describes {n_params} parameters, over the budget of {max_parameters}")
    budget = 8 * (n_params + 1) + 100 * 2 ** 20
    data, _ = _sha256(os.path.join(directory, WEIGHTS_FILE), budget)
    header, meta = _read_header(data)
    if set(header) != set(want):
        missing, extra = sorted(set(want) - set(header)), sorted(set(header) - set(want))
        raise WeightsError(f"model.safetensors does not match the config: missing {missing[:5]}, unexpected {extra[:5]}")
    for name, (shape, dt) in want.items():
        if header[name][:2] != (dt, tuple(shape)):
            raise WeightsError(f"tensor {name!r} is {header[name][0]} {list(header[name][1])}, the config says {dt} {list(shape)}")
    n = struct.unpack("<Q", data[:8])[0]
    if verify_digests:
        tensor_digest = hashlib.sha256(data[8 + n:]).hexdigest()
        if config.get("digests", {}).get("tensors_sha256") != tensor_digest:
            raise DigestError("the weights' tensor bytes do not match config.digests.tensors_sha256 (changed after saving)")
        body = {k: v for k, v in config.items() if k != "digests"}
        if meta.get("config_sha256") != hashlib.sha256(canonical_json(body).encode()).hexdigest():
            raise DigestError("config.json does not match the config_sha256 recorded in model.safetensors (changed after saving)")
    from safetensors.torch import load as st_load

    tensors = st_load(data)
    for name, t in tensors.items():
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise WeightsError(f"tensor {name!r} holds NaN or infinity")
    return PortableTransformer(config, tensors)


def main(argv: list, stdin=sys.stdin) -> int:
    """Classify the WORD arguments, or without any the lines of stdin; usage and exit 2 with neither."""
    words = argv[2:] or ([] if len(argv) < 2 or stdin is None or stdin.isatty() else [ln.rstrip("\r\n") for ln in stdin])
    if not words or argv[1] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        logits = (model := load(argv[1])).logits(words)
    except (ModelFileError, ValueError, FileNotFoundError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(f"{w!r}\t{z:.6g}\t{'accept' if z > model.threshold else 'reject'}" for w, z in zip(words, logits.tolist())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
