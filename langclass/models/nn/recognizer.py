"""The transformer string classifier of the theorems: ``BOS w EOS`` → accept logit read at EOS.

Architecture (*Disentangling the Expressivity of RoPE*, §2.2; training setup App. E.2: soft
attention, strict future mask, 5 layers, d_model 64, 8 heads): token embedding (+ an absolute
positional encoding if any) → L layers of [multi-head attention + residual, feed-forward (ReLU) +
residual] with layer normalization before (``pre``) or after (``post``) each sub-layer, or none
(``none``, as in the masked hard-attention transformers of *Masked Hard-Attention Transformers
Recognize Exactly the Star-Free Languages*, §6.1) → (final LayerNorm for pre-norm) → linear readout
of the EOS state → one logit; accept iff logit > 0 (§6.1 accepts at ≥ 0; :meth:`Recognizer.accepts`
takes ``threshold``).

``RecognizerConfig`` is a frozen dataclass; ``Recognizer(config)`` builds the module in the config's
dtype (float32 by default; float64, bfloat16, float16 supported; autocast works on CPU and GPU).
Every parameter is a plain ``nn.Linear`` / ``nn.Embedding`` / ``nn.LayerNorm`` weight, so exact
constructions can assign them (see :class:`~langclass.models.nn.attention.MultiHeadAttention` for the
per-head row layout).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from langclass.core.base.errors import InputError
from langclass.models.nn.attention import ATTENTIONS, IMPLS, LENGTH_SCALES, MASKS, TIES, AttentionTrace, MultiHeadAttention
from langclass.models.nn.encodings import PositionalEncoding, canonical_json, make_encoding
from langclass.models.nn.tokens import Batch, Vocabulary

__all__ = ["RecognizerConfig", "Recognizer", "Block", "DTYPES", "NORMS", "READOUTS", "ForwardTrace"]

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
NORMS = ("pre", "post", "none")
ACTIVATIONS = ("relu", "gelu")
READOUTS = ("eos", "last")
"""Where the decision is read: ``eos`` — input ``BOS w EOS``, readout at EOS (the strict setting of
*Disentangling the Expressivity of RoPE*, §2.2); ``last`` — input ``BOS w`` (no EOS), readout at the
last position (the last letter, BOS for the empty word): the causal setting, the framing of the
C-RASP construction (:mod:`langclass.models.construct.counting`)."""


def _cfg_err(msg: str, key: str) -> InputError:
    return InputError(msg, field=f"model.{key}")


@dataclass(frozen=True)
class RecognizerConfig:
    """Configuration of a :class:`Recognizer` (JSON round-trip with ``to_dict`` / ``from_dict``).

    Attributes:
        alphabet: the ordered alphabet Σ.
        d_model: model width (default 64).
        n_heads: heads per layer (default 8).
        n_layers: L (default 5).
        d_ff: feed-forward hidden width (default 4·d_model).
        d_head: per-head width (default d_model // n_heads).
        attention: ``"soft"`` (stable softmax) or ``"hard"`` (unique hard attention).
        tie: ``"leftmost"`` or ``"rightmost"`` (hard attention).
        mask: ``"strict"`` (j < i), ``"nonstrict"`` (j ≤ i) or ``"none"``.
        norm: ``"pre"``, ``"post"`` or ``"none"``.
        encoding: positional encoding spec ``{"name": family, **params}`` (see
            :func:`~langclass.models.nn.encodings.make_encoding`); d_model, d_head, n_heads come from
            this config. Default ``{"name": "nope"}``.
        dtype: ``"float32"``, ``"float64"``, ``"bfloat16"`` or ``"float16"``.
        score_scale: multiplier of q·k (default 1/√d_head).
        length_scale: ``"none"`` (default) or ``"log"``: every attention score of query i is
            multiplied by ln(number of keys i sees) — the log-length scaling of *Overcoming a
            Theoretical Limitation of Self-Attention*, which keeps one key's weight from diluting
            as 1/n on long strings (:func:`~langclass.models.nn.attention.length_factor`). Left out of
            :meth:`to_dict` when ``"none"``, so the digests of existing models do not change.
        bias: biases in the linear layers.
        activation: ``"relu"`` or ``"gelu"``.
        dropout: dropout probability on sub-layer outputs (training only).
        layer_norm_eps: LayerNorm epsilon.
        score_grid: hard attention only: None (default, exact scores) or G > 0 — the hard choice is
            made on the scores rounded to multiples of 1/G (:func:`~langclass.models.nn.attention.grid_scores`;
            trained hard-attention models use G = 1, docs/training.md). Left out of :meth:`to_dict`
            when None.
        attention_impl: ``"exact"`` (default; materialized scores, the theorem semantics bit for
            bit) or ``"sdpa"`` (soft attention through PyTorch's fused scaled-dot-product attention —
            same function up to floating-point reassociation, much faster; for training/evaluation).
        readout: ``"eos"`` (default; input ``BOS w EOS``, decision at EOS) or ``"last"`` (input
            ``BOS w``, decision at the last position — the causal setting; see :data:`READOUTS`).
        outputs: width of the readout (default 1: one accept logit). ``outputs > 1`` is a
            classification head over ``outputs`` classes (the states of a minimal DFA for the
            state-prediction task): :meth:`Recognizer.position_logits` applies it at every position.
        ``readout`` and ``outputs`` are left out of :meth:`to_dict` at their defaults (digests of
        existing models do not change).

    Raises:
        InputError: any invalid field (``field="model.<name>"``), including invalid encoding parameters.
    """

    alphabet: tuple[str, ...]
    d_model: int = 64
    n_heads: int = 8
    n_layers: int = 5
    d_ff: int | None = None
    d_head: int | None = None
    attention: str = "soft"
    tie: str = "rightmost"
    mask: str = "strict"
    norm: str = "pre"
    encoding: Mapping[str, Any] = field(default_factory=lambda: {"name": "nope"})
    dtype: str = "float32"
    score_scale: float | None = None
    length_scale: str = "none"
    bias: bool = True
    activation: str = "relu"
    dropout: float = 0.0
    layer_norm_eps: float = 1e-5
    attention_impl: str = "exact"
    readout: str = "eos"
    outputs: int = 1
    score_grid: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "alphabet", tuple(self.alphabet))
        Vocabulary(self.alphabet)  # validates the alphabet (AlphabetError)
        for key in ("d_model", "n_heads", "n_layers"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if key == "n_layers" else 1):
                raise _cfg_err(f"{key} must be an integer ≥ {0 if key == 'n_layers' else 1}, got {v!r}", key)
        if isinstance(self.outputs, bool) or not isinstance(self.outputs, int) or not 1 <= self.outputs <= 1_000_000:
            raise _cfg_err(f"outputs must be an integer in 1..1000000, got {self.outputs!r}", "outputs")
        for key in ("d_ff", "d_head"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise _cfg_err(f"{key} must be a positive integer, got {v!r}", key)
        if self.d_head is None and self.d_model % self.n_heads:
            raise _cfg_err(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; set d_head", "d_head")
        for key, allowed in (("attention", ATTENTIONS), ("tie", TIES), ("mask", MASKS), ("norm", NORMS),
                             ("dtype", tuple(DTYPES)), ("activation", ACTIVATIONS), ("attention_impl", IMPLS),
                             ("length_scale", LENGTH_SCALES), ("readout", READOUTS)):
            if getattr(self, key) not in allowed:
                raise _cfg_err(f"{key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}", key)
        if not isinstance(self.encoding, Mapping) or "name" not in self.encoding:
            raise _cfg_err("encoding must be a mapping with a 'name'", "encoding")
        object.__setattr__(self, "encoding", dict(self.encoding))
        if not (0.0 <= float(self.dropout) < 1.0):
            raise _cfg_err(f"dropout must be in [0, 1), got {self.dropout!r}", "dropout")
        if self.score_grid is not None and (self.attention != "hard" or isinstance(self.score_grid, bool)
                                            or not isinstance(self.score_grid, (int, float)) or not 0 < self.score_grid < float("inf")):
            raise _cfg_err("score_grid is a positive number, for hard attention only", "score_grid")
        if self.score_scale is not None and not isinstance(self.score_scale, (int, float)):
            raise _cfg_err("score_scale must be a number or null", "score_scale")
        self.build_encoding()  # validates the encoding parameters

    __hash__ = None  # type: ignore[assignment]  # holds a dict

    @property
    def head_dim(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def ff_dim(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def build_encoding(self) -> PositionalEncoding:
        """A fresh encoding module for this config (compute dtype float64 for float64 models)."""
        spec = dict(self.encoding)
        name = spec.pop("name")
        if self.dtype == "float64":
            spec.setdefault("compute_dtype", "float64")
        context = {"d_model": self.d_model, "d_head": self.head_dim, "n_heads": self.n_heads}
        for key, value in context.items():
            if key in spec and spec[key] != value:
                raise InputError(f"encoding {name!r}: {key}={spec[key]!r} conflicts with the model's {key}={value}",
                                 field=f"encoding.{key}")
        enc = make_encoding(name, **{**context, **spec})
        if getattr(enc, "layers", 1) not in (1, self.n_layers):
            raise InputError(f"encoding {name!r}: layers={enc.layers} must be 1 (shared) or the model's n_layers={self.n_layers}",
                             field="encoding.layers")
        return enc

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (alphabet as a list)."""
        d = asdict(self)
        d["alphabet"] = list(self.alphabet)
        d["encoding"] = json.loads(canonical_json(dict(self.encoding)))
        for key, default in (("length_scale", "none"), ("readout", "eos"), ("outputs", 1), ("score_grid", None)):
            if d[key] == default:  # the default: keeps the digests of models made before the option
                del d[key]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RecognizerConfig":
        """Inverse of :meth:`to_dict`.

        Raises:
            InputError: unknown or invalid keys.
        """
        if not isinstance(data, Mapping):
            raise InputError("model config must be an object", field="model")
        known = set(cls.__dataclass_fields__)
        for key in data:
            if key not in known:
                raise _cfg_err(f"unknown model config key {key!r}", key)
        if "alphabet" not in data:
            raise _cfg_err("alphabet is required", "alphabet")
        return cls(**dict(data))


class FeedForward(nn.Module):
    """Position-wise 2-layer network: ``fc2(act(fc1(x)))``; fc1 weight [d_ff, d_model], fc2 weight [d_model, d_ff]."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff, bias=bias)
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)
        self.act = nn.ReLU() if activation == "relu" else nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))  # [batch, seq, d_model]


class Block(nn.Module):
    """One transformer layer: attention and feed-forward sub-layers with residuals and LayerNorm.

    pre-norm: x + Attn(LN1(x)), then + FF(LN2(·)); post-norm: LN1(x + Attn(x)), then LN2(· + FF(·));
    none: x + Attn(x), then + FF(·) (*Masked Hard-Attention Transformers …*, §6.1, Eq. 1).
    """

    def __init__(self, cfg: RecognizerConfig) -> None:
        super().__init__()
        self.norm = cfg.norm
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.attention, cfg.tie, cfg.mask,
                                       cfg.score_scale, cfg.bias, cfg.attention_impl, cfg.length_scale, cfg.score_grid)
        self.ff = FeedForward(cfg.d_model, cfg.ff_dim, cfg.activation, cfg.bias)
        if cfg.norm != "none":
            self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
            self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor | None, encoding: PositionalEncoding,
                return_trace: bool = False):
        trace = None
        if self.norm == "pre":
            a = self.attn(self.ln1(x), positions, valid, encoding, return_trace)
            if return_trace:
                a, trace = a
            x = x + self.drop(a)
            x = x + self.drop(self.ff(self.ln2(x)))
        elif self.norm == "post":
            a = self.attn(x, positions, valid, encoding, return_trace)
            if return_trace:
                a, trace = a
            x = self.ln1(x + self.drop(a))
            x = self.ln2(x + self.drop(self.ff(x)))
        else:
            a = self.attn(x, positions, valid, encoding, return_trace)
            if return_trace:
                a, trace = a
            x = x + self.drop(a)
            x = x + self.drop(self.ff(x))
        return (x, trace) if return_trace else x  # [batch, seq, d_model]

    def step(self, x: torch.Tensor, positions: torch.Tensor, cache, valid: torch.Tensor | None,
             encoding: PositionalEncoding):
        """:meth:`forward` for ``t_new`` further positions ``x [batch, t_new, d_model]`` with the key/value
        cache of the earlier ones (:meth:`MultiHeadAttention.step`); returns ``(x, cache)``."""
        if self.norm == "pre":
            a, cache = self.attn.step(self.ln1(x), positions, cache, valid, encoding)
            x = x + self.drop(a)
            x = x + self.drop(self.ff(self.ln2(x)))
        elif self.norm == "post":
            a, cache = self.attn.step(x, positions, cache, valid, encoding)
            x = self.ln1(x + self.drop(a))
            x = self.ln2(x + self.drop(self.ff(x)))
        else:
            a, cache = self.attn.step(x, positions, cache, valid, encoding)
            x = x + self.drop(a)
            x = x + self.drop(self.ff(x))
        return x, cache


@dataclass
class ForwardTrace:
    """Everything a forward pass computed (for exact-construction verification).

    Attributes:
        states: L + 1 tensors ``[batch, seq, d_model]``: the embedding output and each layer's output.
        attention: one :class:`AttentionTrace` per layer.
        final: ``[batch, seq, d_model]`` after the final norm (= states[-1] without one).
        logits: ``[batch]``.
    """

    states: list[torch.Tensor]
    attention: list[AttentionTrace]
    final: torch.Tensor
    logits: torch.Tensor


class Recognizer(nn.Module):
    """Transformer language recognizer: ``BOS w EOS`` → accept logit at EOS.

    Args:
        config: a :class:`RecognizerConfig` (or a dict accepted by ``RecognizerConfig.from_dict``).

    Attributes:
        vocab: :class:`~langclass.models.nn.tokens.Vocabulary`.
        embedding: ``nn.Embedding(vocab.size, d_model)`` (weight [vocab, d_model]).
        encoding: the positional encoding module (its manifest/digest identify it).
        layers: ``nn.ModuleList`` of :class:`Block`.
        final_norm: LayerNorm for pre-norm, identity otherwise.
        readout: ``nn.Linear(d_model, outputs)`` applied to the state at the readout position
            (EOS, or the last position with ``readout="last"``).

    Example:
        >>> m = Recognizer(RecognizerConfig(alphabet=("a", "b"), d_model=16, n_heads=2, n_layers=1))
        >>> m.logits_for(["ab", ""]).shape
        torch.Size([2])
    """

    def __init__(self, config: RecognizerConfig | Mapping[str, Any]) -> None:
        super().__init__()
        if not isinstance(config, RecognizerConfig):
            config = RecognizerConfig.from_dict(config)
        self.config = config
        self.vocab = Vocabulary(config.alphabet)
        self.embedding = nn.Embedding(self.vocab.size, config.d_model)  # [vocab, d_model]
        self.encoding = config.build_encoding()
        self.layers = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
        self.final_norm: nn.Module = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.norm == "pre" else nn.Identity()
        self.readout = nn.Linear(config.d_model, config.outputs, bias=config.bias)
        self.to(DTYPES[config.dtype])

    @property
    def dtype(self) -> torch.dtype:
        return self.embedding.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.embedding.weight.device

    def forward(self, ids: torch.Tensor, valid: torch.Tensor | None = None, eos_index: torch.Tensor | None = None,
                return_trace: bool = False):
        """Accept logits.

        Args:
            ids: ``int64 [batch, seq]`` right-padded ``BOS w EOS`` ids (``BOS w`` with
                ``readout="last"``; see :meth:`Vocabulary.batch`).
            valid: ``bool [batch, seq]`` (default ``ids != PAD``).
            eos_index: ``int64 [batch]`` the readout index (default: position of the last valid
                token — EOS, or the last letter / BOS with ``readout="last"``).
            return_trace: also return a :class:`ForwardTrace`.

        Returns:
            ``[batch]`` logits in float32 (float64 for float64 models; accept iff > 0) —
            ``[batch, outputs]`` when ``outputs > 1`` — or ``(logits, trace)``.
        """
        if valid is None:
            valid = ids != 0
        if eos_index is None:
            eos_index = valid.long().sum(dim=1) - 1  # [batch]
        B, T = ids.shape
        positions = self.encoding.position_ids(T, device=ids.device)  # [1, T]
        x = self.embedding(ids)  # [batch, seq, d_model]
        x = self.encoding.embed(x, positions)
        states = [x]
        traces = []
        for l, layer in enumerate(self.layers):
            enc = self.encoding.for_layer(l)
            if return_trace:
                x, tr = layer(x, positions, valid, enc, True)
                traces.append(tr)
                states.append(x)
            else:
                x = layer(x, positions, valid, enc)
        final = self.final_norm(x)  # [batch, seq, d_model]
        h = final[torch.arange(B, device=ids.device), eos_index]  # [batch, d_model]
        logits = self.readout(h)  # [batch, outputs]
        if self.config.outputs == 1:
            logits = logits.squeeze(-1)  # [batch]
        if logits.dtype != torch.float64:
            logits = logits.float()
        if return_trace:
            return logits, ForwardTrace(states=states, attention=traces, final=final, logits=logits)
        return logits

    def position_logits(self, ids: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """The readout at every position: ``[batch, seq, outputs]`` (float32; float64 for float64
        models). With a mask that hides later keys (``strict``/``nonstrict``) position t depends on
        tokens 0..t only. Used by the state-prediction task (one class per DFA state at every
        position; the protocol of *Algebraic Decomposition Theory for Transformer Length
        Generalization*). Padded rows are computed but meaningless."""
        if valid is None:
            valid = ids != 0
        positions = self.encoding.position_ids(ids.shape[1], device=ids.device)
        x = self.encoding.embed(self.embedding(ids), positions)
        for l, layer in enumerate(self.layers):
            x = layer(x, positions, valid, self.encoding.for_layer(l))
        out = self.readout(self.final_norm(x))  # [batch, seq, outputs]
        return out if out.dtype == torch.float64 else out.float()

    def extend(self, ids: torch.Tensor, caches: list | None = None, valid: torch.Tensor | None = None):
        """Incremental evaluation with per-layer key/value caches: the final states
        ``[batch, t_new, d_model]`` (after the final norm) of ``t_new`` further tokens ``ids``
        given the caches of the tokens before them (None = start). Prefill + token-by-token decode
        gives the states of :meth:`forward` (the prefill/decode/cache invariant of *Transformer
        System M3.4 — Rotary Position Embedding*); read a decision with ``self.readout(states[:, -1])``
        at EOS. Memory O(t·d) for the caches plus ``t_new × t`` scores per head.

        Returns:
            ``(states, caches)``.
        """
        caches = list(caches) if caches is not None else [None] * len(self.layers)
        start = caches[0].length if caches and caches[0] is not None else 0
        T = ids.shape[1]
        if valid is None:
            valid = ids != 0
        positions = self.encoding.position_ids(start + T, device=ids.device)[:, start:]  # [1, T]
        x = self.encoding.embed(self.embedding(ids), positions)
        for l, layer in enumerate(self.layers):
            x, caches[l] = layer.step(x, positions, caches[l], valid, self.encoding.for_layer(l))
        return self.final_norm(x), caches

    def forward_batch(self, batch: Batch, return_trace: bool = False):
        """:meth:`forward` on a :class:`Batch` (moved to the model's device)."""
        batch = batch.to(self.device)
        return self(batch.ids, batch.valid, batch.eos_index, return_trace)

    @torch.no_grad()
    def logits_for(self, words: Sequence[Sequence[str]], batch_size: int = 256) -> torch.Tensor:
        """Logits ``[len(words)]`` (float32, CPU) for words given as letter sequences or strings.

        Raises:
            UnknownSymbolError: a letter outside the alphabet.
        """
        out = []
        for start in range(0, len(words), batch_size):
            chunk = words[start : start + batch_size]
            out.append(self.forward_batch(self.vocab.batch(chunk, eos=self.config.readout == "eos")).cpu())
        return torch.cat(out) if out else torch.zeros(0)

    def accepts(self, words: Sequence[Sequence[str]], threshold: float = 0.0) -> list[bool]:
        """Accept decisions (logit > threshold) for each word."""
        return [bool(v > threshold) for v in self.logits_for(words).tolist()]

    def manifest(self) -> dict[str, Any]:
        """JSON-ready identity: config, encoding manifest and digest, parameter count."""
        return {
            "schema": "langclass.recognizer/1",
            "config": self.config.to_dict(),
            "encoding": self.encoding.manifest(),
            "encoding_digest": self.encoding.digest(),
            "parameters": sum(p.numel() for p in self.parameters()),
        }

    def digest(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`manifest` (architecture, not weights)."""
        return hashlib.sha256(canonical_json(self.manifest()).encode()).hexdigest()
