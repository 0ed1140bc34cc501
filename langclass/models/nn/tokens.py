"""Token ids for ``BOS w EOS`` inputs and right-padded batches.

Ids are fixed: ``PAD = 0``, ``BOS = 1``, ``EOS = 2``, and the alphabet's letters get ``3, 4, …`` in
alphabet order. A word w of length n becomes ``[BOS, w_1, …, w_n, EOS]`` (n + 2 tokens); BOS sits at
sequence index 0 and EOS at index n + 1, the readout position (*Disentangling the Expressivity of
RoPE*, §2.2 and App. D: "bos occupies position 0 … eos occupies position |w|+1").

Batches are padded on the *right*, so a token's sequence index is its semantic position for every
row; padding keys are masked out of attention and the EOS index of each row is carried along.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from langclass.core.base.errors import AlphabetError, UnknownSymbolError

__all__ = ["PAD", "BOS", "EOS", "NUM_SPECIAL", "Vocabulary", "Batch"]

PAD = 0
BOS = 1
EOS = 2
NUM_SPECIAL = 3


@dataclass(frozen=True)
class Batch:
    """A right-padded batch of ``BOS w EOS`` sequences.

    Attributes:
        ids: ``int64 [batch, seq]`` token ids, ``PAD`` after each row's EOS.
        valid: ``bool [batch, seq]``, True on BOS, letters and EOS (False on padding).
        eos_index: ``int64 [batch]``, index of each row's readout token: its EOS (= word length + 1),
            or its last token (= word length) for a ``BOS w`` batch (``eos=False``).
        lengths: ``int64 [batch]``, word lengths n (without BOS/EOS).
    """

    ids: torch.Tensor
    valid: torch.Tensor
    eos_index: torch.Tensor
    lengths: torch.Tensor

    def to(self, device: torch.device | str) -> "Batch":
        """The same batch on ``device``."""
        return Batch(self.ids.to(device), self.valid.to(device), self.eos_index.to(device), self.lengths.to(device))

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])


@dataclass(frozen=True)
class Vocabulary:
    """Alphabet ↔ token ids with the special tokens PAD, BOS, EOS.

    Args:
        alphabet: the ordered alphabet Σ (non-empty, distinct, non-empty strings).

    Raises:
        AlphabetError: empty alphabet, empty or duplicate symbol, or a symbol equal to a
            reserved name (``<pad>``, ``<bos>``, ``<eos>``).

    Example:
        >>> v = Vocabulary(("a", "b"))
        >>> v.encode("ab")
        [1, 3, 4, 2]
        >>> v.batch(["a", ""]).ids.tolist()
        [[1, 3, 2], [1, 2, 0]]
    """

    alphabet: tuple[str, ...]

    def __post_init__(self) -> None:
        alphabet = tuple(self.alphabet)
        object.__setattr__(self, "alphabet", alphabet)
        if not alphabet:
            raise AlphabetError("the alphabet is empty", field="alphabet")
        for s in alphabet:
            if not isinstance(s, str) or s == "":
                raise AlphabetError(f"alphabet symbol {s!r} is not a non-empty string", field="alphabet")
            if s in self.special_names:
                raise AlphabetError(f"alphabet symbol {s!r} is reserved", field="alphabet")
        if len(set(alphabet)) != len(alphabet):
            raise AlphabetError("the alphabet has a duplicate symbol", field="alphabet")
        object.__setattr__(self, "_index", {s: i + NUM_SPECIAL for i, s in enumerate(alphabet)})

    special_names = ("<pad>", "<bos>", "<eos>")

    @property
    def size(self) -> int:
        """Number of token ids (|Σ| + 3)."""
        return len(self.alphabet) + NUM_SPECIAL

    def symbol_id(self, symbol: str) -> int:
        """Token id of one letter.

        Raises:
            UnknownSymbolError: the symbol is not in the alphabet.
        """
        try:
            return self._index[symbol]  # type: ignore[attr-defined]
        except (KeyError, TypeError):
            raise UnknownSymbolError(f"symbol {symbol!r} is not in the alphabet {list(self.alphabet)}", field="word") from None

    def encode(self, word: Sequence[str], eos: bool = True) -> list[int]:
        """``[BOS, ids of w…, EOS]`` (without EOS when ``eos`` is False: the causal setting's
        ``BOS w``); a ``str`` word is read one character per letter.

        Raises:
            UnknownSymbolError: a letter not in the alphabet.
        """
        return [BOS, *(self.symbol_id(s) for s in word), *((EOS,) if eos else ())]

    def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
        """The word of a ``BOS w EOS [PAD…]`` id sequence (specials dropped)."""
        out = []
        for t in ids:
            t = int(t)
            if t >= NUM_SPECIAL:
                out.append(self.alphabet[t - NUM_SPECIAL])
            elif t == EOS:
                break
        return tuple(out)

    def batch(self, words: Sequence[Sequence[str]], pad_to: int | None = None, device: torch.device | str | None = None,
              eos: bool = True) -> Batch:
        """Encode and right-pad a list of words.

        Args:
            words: the words (each a sequence of letters, or a str of one-character letters).
            pad_to: total sequence length (≥ longest word + 2); default: longest word + 2.
            device: where to put the tensors.
            eos: append EOS (default). False gives ``BOS w`` (the causal setting); ``eos_index``
                is then the index of the last token (|w|; BOS for the empty word).

        Returns:
            :class:`Batch` with ``ids [len(words), seq]``.

        Raises:
            UnknownSymbolError: a letter not in the alphabet.
            ValueError: ``pad_to`` shorter than the longest encoded word, or no words.
        """
        if len(words) == 0:
            raise ValueError("cannot batch zero words")
        encoded = [self.encode(w, eos) for w in words]
        seq = max(len(e) for e in encoded)
        if pad_to is not None:
            if pad_to < seq:
                raise ValueError(f"pad_to={pad_to} is shorter than the longest encoded word ({seq})")
            seq = pad_to
        ids = torch.full((len(words), seq), PAD, dtype=torch.long)  # [batch, seq]
        for r, e in enumerate(encoded):
            ids[r, : len(e)] = torch.tensor(e, dtype=torch.long)
        extra = 2 if eos else 1
        lengths = torch.tensor([len(e) - extra for e in encoded], dtype=torch.long)  # [batch]
        valid = ids != PAD  # [batch, seq]
        batch = Batch(ids=ids, valid=valid, eos_index=lengths + (1 if eos else 0), lengths=lengths)
        return batch.to(device) if device is not None else batch

    def batch_from_indices(self, letters: Sequence[Sequence[int]], pad_to: int | None = None,
                           device: torch.device | str | None = None, eos: bool = True) -> Batch:
        """Like :meth:`batch` but words are given as letter indices 0…|Σ|−1 (as in ``DFA.encode``)."""
        words = []
        for w in letters:
            idx = [int(i) for i in w]
            if any(i < 0 or i >= len(self.alphabet) for i in idx):
                raise UnknownSymbolError(f"letter index outside 0..{len(self.alphabet) - 1}", field="word")
            words.append([self.alphabet[i] for i in idx])
        return self.batch(words, pad_to=pad_to, device=device, eos=eos)
