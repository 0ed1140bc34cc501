"""Stage 3 of core — ingest: a language as the user gives it (regex, DFA JSON, formula, program) read into the canonical minimal DFA; imports base, automata, logic."""
