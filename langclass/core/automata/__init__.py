"""Stage 1 of core — automata: DFAs, minimization, graphs, words, export; imports base."""
