"""Reading finished runs back: compare agents, render a report, rescore, analyze, export.

Everything here works on results files only (the run's JSONL log or the original τ-bench
JSON list), so runs made elsewhere - the published τ-bench trajectories, another
machine's hosted-agent run - compare on the same footing as ours.

Modules: `loading` (files -> `Run`), `compare` (metrics, per-task matrix, paired
differences) with `bootstrap` (the seeded CI) and `tables` (terminal output), `report`
(one self-contained HTML file, with `episode_html` and `svg`), `plots` (optional PNGs),
`rescore` (replay trajectories on today's domain), `analyze` (LLM fault
classification), `mt_bench` (the MT-bench JSONL export), `task_ids` (plain and
`domain/N` ids: order, file names). See docs/compare-and-report.md.
"""
