"""τ² results interchange: read `tau2 run` results files and write ours in that format.

`schema` models the upstream `results.json`; `rescore` re-evaluates every simulation of
such a file against the current task definitions with the τ³ evaluator; `export` turns
our τ³ runs into that format. See docs/tau3.md, "Interchange with the τ³ tool chain".
"""
