"""The five generation variants of spec/002 ("How the variants differ"): consistency, classic, hybrid,
legacy figure and composite. Each returns the 12 finished slots of a pack or raises."""
