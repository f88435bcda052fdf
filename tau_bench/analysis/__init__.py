"""Reading finished runs back: compare agents, render a report, rescore, analyze, export.

Everything here works on results files only (the run's JSONL log or the original τ-bench
JSON list), so runs made elsewhere - the published τ-bench trajectories, another
machine's hosted-agent run - compare on the same footing as ours.

Modules: `loading` (files -> `Run`), `compare` (metrics, per-task matrix, paired
bootstrap), `report` (one self-contained HTML file), `plots` (optional PNGs),
`rescore` (replay trajectories on today's domain), `analyze` (LLM fault
classification), `mt_bench` (the MT-bench JSONL export).
"""
