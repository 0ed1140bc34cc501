"""Stage 7 of core — classification: analyze, the entry of classification (every decider, the lattice, the encoding choice); imports the stages below.

The entry of classification: :func:`~langclass.core.classification.analysis.analyze` runs every
stage below it on a minimal DFA (the monoid and its Green's structure, every class decider with its
certificate, the lattice, the encoding choice) and returns the :class:`~.analysis.Analysis` record;
:func:`~.analysis.format_table` prints it. Imports every lower stage of :mod:`langclass.core`;
nothing in core imports it except the pictures and the census above it.
"""
