"""Pure-Python core: parsing, automata, monoids, classes, lattice, formulas (no web, no torch)."""
