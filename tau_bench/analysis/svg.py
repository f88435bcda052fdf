"""Tiny inline SVG charts for the HTML report: no JavaScript library, no network.

Each function returns one `<svg>` element as a string; every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)


def color(index: int) -> str:
    """The colour of run number `index` (0-based), the same in every chart."""
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float]]
    color: str


_W, _H = 520, 300
_L, _R, _T, _B = 56, 16, 16, 44  # margins


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    # divided first: (v - lo) * (b - a) overflows for values near the largest float
    return a if hi == lo else a + (v - lo) / (hi - lo) * (b - a)


def _axes(
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    x_label: str,
    y_label: str,
) -> list[str]:
    """Grid lines at the ticks (positions in pixels) and both axis labels."""
    out = []
    for y, text in y_ticks:
        out.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" class="grid"/>')
        out.append(
            f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{escape(text)}</text>'
        )
    for i, (x, text) in enumerate(x_ticks):
        # the last label ends at its tick, so it is never cut by the chart's edge
        anchor = "end" if i == len(x_ticks) - 1 and len(x_ticks) > 2 else "middle"
        out.append(
            f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="{anchor}" class="tick">'
            f"{escape(text)}</text>"
        )
    out.append(
        f'<line x1="{_L}" y1="{_H - _B}" x2="{_W - _R}" y2="{_H - _B}" class="axis"/>'
        f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{_H - _B}" class="axis"/>'
    )
    out.append(
        f'<text x="{(_L + _W - _R) / 2:.1f}" y="{_H - 8}" text-anchor="middle" class="label">'
        f"{escape(x_label)}</text>"
    )
    out.append(
        f'<text transform="translate(14 {(_T + _H - _B) / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" class="label">{escape(y_label)}</text>'
    )
    return out


def _svg(title: str, body: list[str], height: int = _H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" '
        f'width="{_W}" height="{height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def line_chart(
    series: Sequence[Series], *, title: str, x_label: str, y_label: str, x_values: Sequence[int]
) -> str:
    """Lines over integer x (pass^k over k); y in [0, 1]."""
    xs = list(x_values) or [1]
    lo, hi = min(xs), max(xs)
    px = [(x, _scale(x, lo, hi, _L + 20, _W - _R - 20)) for x in xs]
    y_ticks = [(_scale(v, 0, 1, _H - _B, _T), f"{v:.1f}") for v in (0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    body = _axes([(p, str(x)) for x, p in px], y_ticks, x_label, y_label)
    for i, s in enumerate(series):
        # Equal curves (two runs with the same pass^k) are drawn a few pixels apart, so
        # neither hides the other; the exact values are in each point's tooltip.
        shift, lift = dodge(i, len(series), 7.0), dodge(i, len(series), 3.0)
        pts = [
            (_scale(x, lo, hi, _L + 20, _W - _R - 20) + shift, _scale(y, 0, 1, _H - _B, _T) - lift)
            for x, y in s.points
        ]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{s.color}" stroke-width="2"/>'
            )
        for (x, y), (kx, ky) in zip(pts, s.points, strict=True):
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{s.color}">'
                f"<title>{escape(s.label)}: pass^{kx:g} = {ky:.3f}</title></circle>"
            )
    return _svg(title, body)


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    color: str


def scatter(points: Sequence[Point], *, title: str, x_label: str, y_label: str) -> str:
    """Labelled points; x from 0 to the largest value (cost), y in [0, 1] (reward).

    Points that share a place (two runs with the same cost and reward) are spread around
    it, and labels are moved apart vertically, so every run stays visible and readable.
    """
    ticks = nice_ticks(max((p.x for p in points), default=0.0))
    x_hi = ticks[-1]
    left = _L + 12  # points at cost 0 sit clear of the axis
    x_ticks = [(_scale(v, 0, x_hi, left, _W - _R), money(v)) for v in ticks]
    y_ticks = [(_scale(v, 0, 1, _H - _B, _T), f"{v:.1f}") for v in (0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    body = _axes(x_ticks, y_ticks, x_label, y_label)
    placed = spread(
        [(_scale(p.x, 0, x_hi, left, _W - _R), _scale(p.y, 0, 1, _H - _B, _T)) for p in points],
        radius=13.0,
    )
    labels = label_positions([cy - 8 for _, cy in placed], top=_T + 8, bottom=_H - _B - 2)
    for p, (cx, cy), ly in zip(points, placed, labels, strict=True):
        anchor = "end" if cx > _W * 0.7 else "start"
        # beside the whole cluster of nearby points, not over a neighbour's circle
        near = [x for x, y in placed if abs(x - cx) < 24 and abs(y - cy) < 24]
        dx = (min(near) - cx - 9) if anchor == "end" else (max(near) - cx + 9)
        body.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{p.color}" fill-opacity="0.85" '
            f'stroke="#fff" stroke-width="1">'
            f"<title>{escape(p.label)}: {money(p.x)}, {p.y:.3f}</title></circle>"
        )
        if abs(ly - (cy - 8)) > 1:  # the label moved away: a thin leader line to its point
            body.append(
                f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{cx + dx:.1f}" y2="{ly - 4:.1f}" '
                f'stroke="{p.color}" stroke-width="0.8"/>'
            )
        body.append(
            f'<text x="{cx + dx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" class="pt">'
            f"{escape(p.label)}</text>"
        )
    return _svg(title, body)


def dodge(index: int, count: int, step: float = 5.0) -> float:
    """Horizontal shift of series `index` of `count`, so lines with equal values are all
    seen side by side (0 for a single series)."""
    return (index - (count - 1) / 2) * step


# Where the 2nd, 3rd... point of a shared place goes: right, below, left, above, diagonals.
_AROUND = tuple(math.radians(a) for a in (0, -90, 180, 90, -45, -135, 135, 45))


def spread(
    centres: Sequence[tuple[float, float]], radius: float = 9.0
) -> list[tuple[float, float]]:
    """Points closer than `radius` to an earlier one are placed on a small circle around
    their shared centre instead of on top of each other."""
    out: list[tuple[float, float]] = []
    groups: list[tuple[float, float, int]] = []  # centre and how many already there
    for x, y in centres:
        for i, (gx, gy, n) in enumerate(groups):
            if math.hypot(x - gx, y - gy) < radius:
                angle = _AROUND[(n - 1) % len(_AROUND)]
                out.append((gx + radius * math.cos(angle), gy - radius * math.sin(angle)))
                groups[i] = (gx, gy, n + 1)
                break
        else:
            groups.append((x, y, 1))
            out.append((x, y))
    return out


def label_positions(
    wanted: Sequence[float], top: float, bottom: float, gap: float = 13.0
) -> list[float]:
    """Baselines for labels wanted at `wanted` (y), at least `gap` apart, kept in
    [top, bottom]: labels of nearby points are stacked instead of printed over each other."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    out = list(wanted)
    last = -math.inf
    for i in order:
        out[i] = max(wanted[i], last + gap, top)
        last = out[i]
    overflow = last - bottom
    if overflow > 0:  # pushed below the plot: shift the stack up, keeping the gaps
        for i in order:
            out[i] = max(top, out[i] - overflow)
    return out


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """0 to a round number >= `hi` in round steps (1, 2, 2.5 or 5 times a power of ten):
    tick labels such as $0.002, $0.004 rather than $0.0013, $0.0026."""
    if not hi > 0 or not math.isfinite(hi):  # NaN and infinity too: no scale to show
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    raw = hi / (count - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(hi / step - 1e-9)
    ticks = [round(i * step, 12) for i in range(n + 1)]
    if not math.isfinite(ticks[-1]):  # the round number above `hi` is past the largest float
        ticks[-1] = hi
    return ticks


def money(v: float) -> str:
    """`$0`, `$0.0025`, `$0.5`, `$12.50`: enough digits to tell ticks apart, no more."""
    if v == 0:
        return "$0"
    if v >= 1:
        return f"${v:.2f}"
    return "$" + f"{v:.6f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Bar:
    """One paired difference: estimate with its interval, on [-1, 1]."""

    label: str
    estimate: float
    low: float
    high: float
    color: str


def forest(bars: Sequence[Bar], *, title: str, x_label: str) -> str:
    """Differences with confidence intervals around a zero line (one row per pair)."""
    row_h = 28
    height = _T + row_h * max(1, len(bars)) + _B
    left = 200
    lo, hi = -1.0, 1.0

    def x(v: float) -> float:
        return _scale(v, lo, hi, left, _W - _R)

    body = []
    for v in (-1, -0.5, 0, 0.5, 1):
        body.append(
            f'<line x1="{x(v):.1f}" y1="{_T}" x2="{x(v):.1f}" y2="{height - _B}" '
            f'class="{"zero" if v == 0 else "grid"}"/>'
            f'<text x="{x(v):.1f}" y="{height - _B + 16}" text-anchor="middle" class="tick">'
            f"{v:+.1f}</text>"
        )
    for i, b in enumerate(bars):
        y = _T + row_h * i + row_h / 2
        body.append(
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{escape(_short(b.label, 30))}</text>"
            f'<line x1="{x(b.low):.1f}" y1="{y:.1f}" x2="{x(b.high):.1f}" y2="{y:.1f}" '
            f'stroke="{b.color}" stroke-width="3"/>'
            f'<circle cx="{x(b.estimate):.1f}" cy="{y:.1f}" r="5" fill="{b.color}">'
            f"<title>{escape(b.label)}: {b.estimate:+.3f} [{b.low:+.3f}, {b.high:+.3f}]</title>"
            "</circle>"
        )
    body.append(
        f'<text x="{(left + _W - _R) / 2:.1f}" y="{height - 8}" text-anchor="middle" '
        f'class="label">{escape(x_label)}</text>'
    )
    return _svg(title, body, height)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
