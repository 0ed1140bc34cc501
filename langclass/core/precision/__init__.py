"""Stage 6 of core — precision: float formats, rotation tables and the choice of positional encoding; imports the stages below."""
