"""The serving loop simulated step by step: clients as benchmark tools run them, an engine's scheduler, each step
priced by the cost model. Pure Python (core ring)."""
