"""The steps every variant is built from (spec/002 "Steps"): inputs and face crop, appearance passport,
anchor portrait, sheets, slots and finishing, QA and single-figure regeneration."""
