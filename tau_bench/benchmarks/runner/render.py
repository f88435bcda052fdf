"""The benchmark's rows as a rich table or Markdown, and its `--levels` syntax."""

from __future__ import annotations

from typing import Any

from tau_bench.benchmarks.runner.levels import DEFAULT_LATENCY
from tau_bench.config.run_config import MAX_CONCURRENCY, MAX_WORKERS

MAX_LEVELS = 100
"""Levels (and worker counts) one command measures: each is a run of its own."""

COLUMNS = (
    ("stack", lambda r: r["stack"]),
    ("conc.", lambda r: str(r["concurrency"])),
    ("episodes", lambda r: str(r["episodes"])),
    ("calls/ep", lambda r: f"{r['calls_per_episode']:.1f}"),
    ("wall s", lambda r: f"{r['wall_s']:.2f}"),
    ("bound s", lambda r: f"{r['bound_s']:.2f}"),
    ("wall/bound", lambda r: f"{r['wall_over_bound']:.2f}"),
    ("wave bound s", lambda r: f"{r['wave_bound_s']:.2f}"),
    ("wall/wave", lambda r: f"{r['wall_over_wave_bound']:.2f}"),
    ("CPU s", lambda r: f"{r['cpu_s']:.2f}"),
    ("CPU ms/call", lambda r: f"{r['cpu_ms_per_call']:.2f}"),
    ("calls/s", lambda r: f"{r['calls_per_s']:.0f}"),
    ("steady calls/s", lambda r: _num(r.get("steady_calls_per_s"), "{:.0f}")),
    ("vs ray x1", lambda r: _scaling(r)),
    ("driver / workers / server / Ray CPU ms/call", lambda r: _split(r)),
    ("steady: driver / workers / server / Ray / steal ms/call", lambda r: _steady_split(r)),
    ("busy cores", lambda r: _num(r.get("busy_cores"), "{:.2f}")),
    ("conns", lambda r: str(r["connections"])),
    (
        "turn p50/p95 ms",
        lambda r: f"{r['agent_turn_p50_s'] * 1000:.0f}/{r['agent_turn_p95_s'] * 1000:.0f}",
    ),
    ("peak RSS MB", lambda r: f"{r['peak_rss_mb']:.0f}"),
    ("errors", lambda r: str(r["errors"])),
)


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else spec.format(value)


def _scaling(row: dict[str, Any]) -> str:
    if "scaling" not in row:
        return "-"
    text = f"{row['scaling']:.2f}x ({100 * row['efficiency']:.0f} %)"
    if row["workers"] > 1 and len(row.get("scaling_rounds", [])) > 1:  # a median: its range
        text += f", rounds {min(row['scaling_rounds']):.2f}-{max(row['scaling_rounds']):.2f}"
    if "machine_ceiling" in row:  # what the machine gives as many busy processes
        text += f"; machine {row['machine_ceiling']:.2f}x"
    return text


def _split(row: dict[str, Any]) -> str:
    """The benchmark (driver) process's, the Ray workers', the fake server's and Ray's
    services' CPU."""
    workers = row.get("workers_cpu_ms_per_call") if row.get("backend") == "ray" else None
    return " / ".join(
        (
            _num(row.get("driver_cpu_ms_per_call"), "{:.2f}"),
            _num(workers, "{:.2f}"),
            _num(row.get("server_cpu_ms_per_call"), "{:.2f}"),
            _num(row.get("ray_cpu_ms_per_call"), "{:.2f}"),
        )
    )


def _steady_split(row: dict[str, Any]) -> str:
    """The same in the steady window (`levels.steady_cpu`), and the hypervisor's steal."""
    split = row.get("steady_cpu_ms_per_call")
    if not split:
        return "-"
    workers = split["workers"] if row.get("backend") == "ray" else None
    return " / ".join(
        _num(v, "{:.2f}")
        for v in (split["driver"], workers, split["server"], split["ray"], split["steal"])
    )


def render(rows: list[dict[str, Any]], latency: float = DEFAULT_LATENCY) -> Any:
    """The rows as a rich table (one column per figure the issue asks for). A narrow
    column folds its text onto more lines: no figure is cut short."""
    from rich.table import Table

    table = Table(title=f"Runner: fake OpenAI server, {latency * 1000:.0f} ms per model call")
    for name, _ in COLUMNS:
        table.add_column(name, justify="left" if name == "stack" else "right", overflow="fold")
    for row in rows:
        table.add_row(*(cell(row) for _, cell in COLUMNS))
    return table


CEILING_NOISE = 1.1
"""A machine ceiling past this many times its process count is the host's drift (N busy
processes cannot do more than N times one's work), said so under the table."""


def scaling_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per multi-worker Ray row, under the table: its scaling with every
    round's figure, which the table's narrow column can only give as a range."""
    out = []
    for row in rows:
        if row.get("workers", 0) < 2 or "scaling" not in row:
            continue
        line = (
            f"{row['stack']} at {row['concurrency']}:{row['episodes']}: "
            f"{row['scaling']:.2f}x the steady calls/s of ray x1 "
            f"({100 * row['efficiency']:.0f} % efficiency)"
        )
        if len(row.get("scaling_rounds", [])) > 1:
            line += ", median of rounds " + " / ".join(f"{x:.2f}" for x in row["scaling_rounds"])
        if "machine_ceiling" in row:
            line += f"; machine ceiling {row['machine_ceiling']:.2f}x"
            ratios = row.get("machine_ceiling_rounds", [])
            if len(ratios) > 1:
                line += " (rounds " + " / ".join(f"{x:.2f}" for x in ratios) + ")"
            if row["machine_ceiling"] > CEILING_NOISE * row["workers"]:
                line += (
                    f", above {row['workers']} processes' worth: the host's speed changed "
                    "between its one- and many-process parts, so it bounds nothing"
                )
        if "scaling_model_elsewhere" in row:  # `levels.without_the_model`
            line += (
                f"; with the fake model's CPU elsewhere about {row['scaling_model_elsewhere']:.2f}x"
            )
            estimates = row.get("scaling_model_elsewhere_rounds", [])
            if len(estimates) > 1:
                line += " (rounds " + " / ".join(f"{x:.2f}" for x in estimates) + ")"
        out.append(line)
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (for docs/performance.md)."""
    out = [
        "| " + " | ".join(name for name, _ in COLUMNS) + " |",
        "|---|" + "---:|" * (len(COLUMNS) - 1),
    ]
    out += ["| " + " | ".join(cell(row) for _, cell in COLUMNS) + " |" for row in rows]
    return "\n".join(out)


def parse_levels(text: str) -> list[tuple[int, int]]:
    """`"1:20,50:500"` -> [(1, 20), (50, 500)] (concurrency:episodes; episodes default 500)."""
    out = []
    for part in text.split(","):
        c, _, n = part.strip().partition(":")
        try:
            concurrency, episodes = int(c), int(n or 500)
        except ValueError:
            raise ValueError(f"bad level {part!r}: expected concurrency:episodes") from None
        if concurrency < 1 or episodes < 1:
            raise ValueError(f"bad level {part!r}: concurrency and episodes must be >= 1")
        if max(concurrency, episodes) > MAX_CONCURRENCY:
            raise ValueError(
                f"bad level {part[:40]!r}: at most {MAX_CONCURRENCY:,} episodes, "
                "and as many at once"
            )
        out.append((concurrency, episodes))
        if len(out) > MAX_LEVELS:
            raise ValueError(f"at most {MAX_LEVELS} levels")
    return out


def parse_workers(text: str) -> tuple[int, ...]:
    """`--workers 1,2`: the Ray worker counts measured."""
    try:
        counts = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise ValueError(f"--workers expects counts like 1,2, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise ValueError("--workers counts must be at least 1")
    if max(counts) > MAX_WORKERS or len(counts) > MAX_LEVELS:
        raise ValueError(f"--workers: at most {MAX_LEVELS} counts of at most {MAX_WORKERS:,}")
    return counts
