#!/usr/bin/env python3
"""A growth curve as an SVG line chart: one or more series of y against x, x on a log2 axis
(numbers of clusters or workers that double), for docs/benchmarks.md.

Usage: scripts/bench/growth-chart.py OUT.svg TITLE XLABEL YLABEL SERIES...
  SERIES: NAME=x1:y1,x2:y2,...   (each its own line and marks; a legend names them)
Example:
  scripts/bench/growth-chart.py startup.svg "Startup" clusters seconds \\
      "startup_s=8:1.38,16:1.36,32:2.57,64:5.59"
"""
import math
import sys

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def parse(series):
    name, points = series.split("=", 1)
    pairs = [p.split(":") for p in points.split(",") if p]
    return name, [(float(x), float(y)) for x, y in pairs]


def nice_top(value):
    """The smallest of 1, 2, 2.5, 5 times a power of ten at or above `value`."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value)


def chart(title, xlabel, ylabel, series):
    xs = sorted({x for _, points in series for x, _ in points})
    top = nice_top(max(y for _, points in series for _, y in points))
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    span = (hi - lo) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + (math.log2(x) - lo) / span * plot_w

    def py(y):
        return TOP + plot_h - y / top * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
    ]
    for k in range(5):
        y = top * k / 4
        out.append(
            f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{LEFT + plot_w}" y2="{py(y):.1f}" '
            'stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>'
        )
    for x in xs:
        out.append(
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{x:g}</text>'
        )
    out.append(
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="black"/>'
    )
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">{xlabel}</text>'
    )
    out.append(
        f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">{ylabel}</text>'
    )
    for i, (name, points) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points))
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
        ly = TOP + 10 + 18 * i
        out.append(
            f'<line x1="{LEFT + plot_w + 12}" y1="{ly}" x2="{LEFT + plot_w + 32}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        out.append(f'<text x="{LEFT + plot_w + 38}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    out, title, xlabel, ylabel = sys.argv[1:5]
    series = [parse(s) for s in sys.argv[5:]]
    with open(out, "w") as f:
        f.write(chart(title, xlabel, ylabel, series))


if __name__ == "__main__":
    main()
