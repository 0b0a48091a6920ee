"""Inline SVG charts, written by hand: no plotting library, nothing loaded, the page stays one file.

Each chart is an <svg role="img"> with a <title>, a visible title, axis labels and tick values,
scaled by its viewBox so it shrinks with the page. Colours are a blue/orange pair that readers
with the common colour-vision deficiencies can tell apart; ties and gaps are grey.
"""

from __future__ import annotations

import math

from irforge.reports.markup import Markup, esc, is_number

WIDTH = 640
BETTER, WORSE, NEUTRAL, INK, GRID = "#2166ac", "#e66101", "#8c8c8c", "#222", "#ddd"
FONT = 'font-family="system-ui, sans-serif"'


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering [low, high]."""
    if not high > low:
        low, high = (low - 0.5, high + 0.5) if low != 0 else (0.0, 1.0)
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude * (1 + 1e-9))
    start, end = math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step
    return [round(start + i * step, 10) for i in range(round((end - start) / step) + 1)]


def tick_label(value: float) -> str:
    text = f"{value:.6g}"
    return "0" if text in ("-0", "0") else text


def _svg(height: int, title: str, kind: str, body: list[str]) -> Markup:
    """The chart's frame: title for assistive technology and on hover, sized by its viewBox."""
    return Markup(
        f'<figure class="chart"><svg class="plot" data-plot="{kind}" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" {FONT} font-size="12">'
        f"<title>{esc(title)}</title>" + "".join(body) + "</svg></figure>")


def _text(x: float, y: float, content, anchor: str = "start", **style) -> str:
    extra = "".join(f' {key.replace("_", "-")}="{esc(value)}"' for key, value in style.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{esc(content)}</text>'


def difference_plot(differences: list[float], measure: str, system: str, against: str,
                    wins: int, ties: int, losses: int) -> Markup:
    """Per-query differences (system - against) sorted from largest to smallest, as bars above
    (system better) and below (worse) zero; ties are a grey tick on the axis."""
    height, left, right, top, bottom = 270, 62, 14, 56, 42
    width, plot_h = WIDTH - left - right, height - top - bottom
    values = sorted((d for d in differences if is_number(d)), reverse=True)
    ticks = nice_ticks(min(values + [0.0]), max(values + [0.0]))
    low, high = ticks[0], ticks[-1]

    def y(value: float) -> float:
        return top + (high - value) / (high - low) * plot_h

    title = f"{measure}: {system} − {against}"
    body = [_text(left, 18, title, font_weight="bold", font_size="14"),
            f'<text x="{left}" y="38" fill="{INK}">per query, n={len(values)}: '
            f'<tspan fill="{BETTER}" font-weight="bold">{wins} wins</tspan> · '
            f'<tspan fill="{NEUTRAL}" font-weight="bold">{ties} ties</tspan> · '
            f'<tspan fill="{WORSE}" font-weight="bold">{losses} losses</tspan></text>']
    for tick in ticks:
        body.append(f'<line x1="{left}" x2="{left + width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y(tick) + 4, tick_label(tick), "end"))
    drawn = values
    if len(values) > width:   # more queries than pixels: draw the sorted curve at one quantile per pixel
        drawn = [values[round(i * (len(values) - 1) / (width - 1))] for i in range(int(width))]
    step = width / max(len(drawn), 1)
    gap = 1.0 if step > 4 else 0.0
    zero = y(0.0)
    for n, value in enumerate(drawn):
        x = left + n * step
        if value == 0:
            body.append(f'<rect x="{x:.1f}" y="{zero - 1.5:.1f}" width="{max(step - gap, 0.6):.2f}" height="3" fill="{NEUTRAL}"/>')
            continue
        top_y, bar_h = (y(value), zero - y(value)) if value > 0 else (zero, y(value) - zero)
        body.append(f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{max(step - gap, 0.6):.2f}" height="{bar_h:.1f}" '
                    f'fill="{BETTER if value > 0 else WORSE}"/>')
    body.append(f'<line x1="{left}" x2="{left + width}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="{INK}"/>')
    if values and not any(values):   # every bar is a tie, hidden under the axis: say so
        body.append(_text(left + width / 2, zero - 10, "no query differs", "middle", fill=NEUTRAL, font_style="italic"))
    body.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="{INK}"/>')
    body.append(_text(left + width / 2, height - 12, "queries, sorted by difference (largest first)", "middle"))
    middle = top + plot_h / 2
    body.append(_text(16, middle, f"Δ {measure}", "middle", transform=f"rotate(-90 16 {middle:.1f})"))
    return _svg(height, f"{title}: per-query differences, {wins} wins, {ties} ties, {losses} losses", "difference", body)


def bar_chart(items: list[tuple[str, float | None, str]], measure: str, title: str, mean: float | None = None) -> Markup:
    """Horizontal bars, one per (label, value, note); a missing value shows its note instead
    (a failed dataset); `mean` as a dashed line."""
    row, left, right, top, bottom = 24, 170, 60, 44, 40
    height = top + row * max(len(items), 1) + bottom
    width = WIDTH - left - right
    known = [v for _, v, _ in items if is_number(v)] + ([mean] if is_number(mean) else [])
    ticks = nice_ticks(0.0, max(known + [0.0]) or 1.0)
    high = ticks[-1]

    def x(value: float) -> float:
        return left + value / high * width

    body = [_text(left, 20, title, font_weight="bold", font_size="14")]
    for tick in ticks:
        body.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 4}" y2="{height - bottom}" stroke="{GRID}"/>')
        body.append(_text(x(tick), height - bottom + 16, tick_label(tick), "middle"))
    for n, (label, value, note) in enumerate(items):
        middle = top + n * row + row / 2
        shown = label if len(label) <= 24 else label[:23] + "…"
        body.append(f'<g>{_text(left - 8, middle + 4, shown, "end")}<title>{esc(label)}</title></g>')
        if is_number(value):
            body.append(f'<rect x="{left}" y="{middle - row * 0.35:.1f}" width="{max(x(value) - left, 0.5):.1f}" '
                        f'height="{row * 0.7:.1f}" fill="{BETTER}"/>')
            body.append(_text(x(value) + 4, middle + 4, f"{value:.4f}"))
        else:
            body.append(_text(left + 4, middle + 4, note or "no value", fill=WORSE, font_style="italic"))
    if is_number(mean):
        body.append(f'<line x1="{x(mean):.1f}" x2="{x(mean):.1f}" y1="{top - 4}" y2="{height - bottom}" '
                    f'stroke="{INK}" stroke-dasharray="5 3"/>')
        body.append(_text(x(mean), top - 8, f"mean {mean:.4f}", "middle"))
    body.append(f'<line x1="{left}" x2="{left}" y1="{top - 4}" y2="{height - bottom}" stroke="{INK}"/>')
    body.append(_text(left + width / 2, height - 8, measure, "middle"))
    return _svg(height, title, "bars", body)
