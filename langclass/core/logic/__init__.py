"""Stage 2 of core — logic: past-LTL formulas and B-RASP programs (syntax, semantics, translations); imports base, automata."""
