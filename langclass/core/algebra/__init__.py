"""Stage 4 of core — algebra: the syntactic monoid, Green's structure, the class deciders and the lattice; imports base, automata, logic, ingest."""
