"""Stage 5 of core — synthesis: formulas and programs built from automata (LTL[P], LTL[P,Y], star-free, FO[<,MOD]); imports the stages below."""
