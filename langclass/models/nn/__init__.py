"""Stage 1 of models — nn: the transformer itself (tokens, encodings, attention, the recognizer); imports core and version only.

The transformer itself (PyTorch): tokens and vocabulary, positional encodings (NoPE, RoPE and its
periodic form, sinusoidal, ALiBi, PJ bias and PJ rotary, the MOD marks), multi-head soft and unique
hard attention, class-count attention, the recognizer and its grouped form that stacks the runs of
a training grid into one module. Everything above it (constructions, training, experiments) builds
on these modules; they import only :mod:`langclass.core` and :mod:`langclass.version`, never another
package of :mod:`langclass.models` and never :mod:`langclass.app`.
"""
