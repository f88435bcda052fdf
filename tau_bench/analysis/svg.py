"""Tiny inline SVG charts for the HTML report: no JavaScript library, no network.

Each function returns one `<svg>` element as a string; every text is escaped.
"""

from __future__ import annotations

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
    return a if hi == lo else a + (v - lo) * (b - a) / (hi - lo)


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
    for x, text in x_ticks:
        out.append(
            f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle" class="tick">'
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
    for s in series:
        pts = [
            (_scale(x, lo, hi, _L + 20, _W - _R - 20), _scale(y, 0, 1, _H - _B, _T))
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
    """Labelled points; x from 0 to the largest value (cost), y in [0, 1] (reward)."""
    x_hi = max((p.x for p in points), default=0.0)
    x_hi = x_hi * 1.1 if x_hi > 0 else 1.0
    x_ticks = [
        (_scale(x_hi * f, 0, x_hi, _L, _W - _R), _money(x_hi * f)) for f in (0, 0.25, 0.5, 0.75, 1)
    ]
    y_ticks = [(_scale(v, 0, 1, _H - _B, _T), f"{v:.1f}") for v in (0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    body = _axes(x_ticks, y_ticks, x_label, y_label)
    for p in points:
        cx, cy = _scale(p.x, 0, x_hi, _L, _W - _R), _scale(p.y, 0, 1, _H - _B, _T)
        anchor = "end" if cx > _W * 0.7 else "start"
        dx = -8 if anchor == "end" else 8
        body.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{p.color}" fill-opacity="0.85">'
            f"<title>{escape(p.label)}: {_money(p.x)}, {p.y:.3f}</title></circle>"
            f'<text x="{cx + dx:.1f}" y="{cy - 8:.1f}" text-anchor="{anchor}" class="pt">'
            f"{escape(p.label)}</text>"
        )
    return _svg(title, body)


def _money(v: float) -> str:
    return "$0" if v == 0 else f"${v:.2g}" if v < 1 else f"${v:.2f}"


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
