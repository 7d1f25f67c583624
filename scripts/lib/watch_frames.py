#!/usr/bin/env python3
"""What scripts/check-watch.sh reads off the screens of `hmw top` it captured with tmux.

    watch_frames.py check FRAMES_DIR MAIN_STATS INTERVAL_S
        The frames (tmux capture-pane -e, one file each, in capture order) against the run's
        statistics: prints `frames=N distinct_done=D clusters=C matches=BOOL` and, on stderr,
        each mismatch. Exit status 0 whatever the verdict (the caller reads the line).
    watch_frames.py html CAPTURE OUT.html
        A capture, its colours included, as an HTML page of a terminal (for a screenshot).

A frame is the overview when its header says `N/M tasks` and its clusters table is there.
Checks: the run's tasks done never decrease over the frames and take at least 3 values; each
cluster's too; the last overview frame, taken once the run ended, shows each cluster's tasks
as its own statistics file counts them and as the main master's does; every frame taken
mid-run shows each cluster's tasks within its mean rate times the refresh interval
(the masters' figures, the launcher's write, top's look and draw) of what the main master's
progress timeline says at the run time the frame shows.
"""

import html
import json
import os
import re
import sys

SGR = re.compile(r"\x1b\[([0-9;]*)m")
HEADER = re.compile(r"^\S+ (running|run \w+)\s+t (\S+)(?: s)?\s+(\d+)(?:/(\d+))? tasks")


def plain(text):
    return SGR.sub("", text)


def seconds(value):
    """`12.3` or `1:02:05` as seconds; None for `-`."""
    if value == "-":
        return None
    if ":" in value:
        h, m, s = (int(x) for x in value.split(":"))
        return 3600 * h + 60 * m + s
    return float(value)


def parse(text, clusters):
    """(ended, t_s, done, {cluster: done}) of an overview frame, or None."""
    lines = plain(text).splitlines()
    if not lines:
        return None
    head = HEADER.match(lines[0])
    if not head:
        return None
    rows = {}
    for line in lines:
        cells = line.strip("│ ").split()
        if len(cells) >= 6 and cells[0] in clusters and set(cells[3]) <= set("█░"):
            rows[cells[0]] = int(cells[4])
    if set(rows) != set(clusters):
        return None
    ended = head.group(1) != "running"
    return ended, seconds(head.group(2)), int(head.group(3)), rows


def timeline(stats):
    """Each cluster's tasks done at each progress sample of the main master: {name: [(t, d)]}."""
    out = {}
    for sample in stats["progress"]:
        for c in sample.get("clusters", []):
            out.setdefault(c["name"], [(0.0, 0)]).append((sample["t_s"], c["tasks_done"]))
    return out


def done_at(points, t):
    """Linear interpolation of (t, done) points at t (the last value past the end)."""
    for (t0, d0), (t1, d1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return d0 + (d1 - d0) * (t - t0) / (t1 - t0) if t1 > t0 else d1
    return points[-1][1]


def check(frames_dir, main_stats, interval_s):
    run_dir = os.path.dirname(main_stats)
    main = json.load(open(main_stats))
    names = [main["name"]] + [c["name"] for c in main["clusters"]]
    own = {}
    for name in names:
        stats = json.load(open(os.path.join(run_dir, f"{name}.stats.json")))
        own[name] = stats["cluster"]["tasks_done"]
    by_main = {main["name"]: main["cluster"]["tasks_done"]}
    by_main.update({c["name"]: c["tasks_done"] for c in main["clusters"]})
    rates = {n: by_main[n] / main["wall_s"] for n in names}
    curves = timeline(main)
    # The figures reach the screen at most this late: a statistics interval, the launcher's
    # look (0.2 s) and write (1 s), top's look and frame (0.25 s each).
    refresh_s = interval_s + 1.7

    files = sorted(os.listdir(frames_dir))
    texts = [open(os.path.join(frames_dir, f), encoding="utf-8").read() for f in files]
    overview = [(t, p) for t in texts if (p := parse(t, names))]
    problems = []
    distinct = len({plain(t) for t, _ in overview})
    totals = [p[2] for _, p in overview]
    if any(b < a for a, b in zip(totals, totals[1:])):
        problems.append(f"the run's tasks done decrease: {totals}")
    for n in names:
        seen = [p[3][n] for _, p in overview]
        if any(b < a for a, b in zip(seen, seen[1:])):
            problems.append(f"{n}'s tasks done decrease: {seen}")
    ended = [p for _, p in overview if p[0]]
    if not ended:
        problems.append("no frame shows the run's end")
    else:
        last = ended[-1][3]
        for n in names:
            if not last[n] == own[n] == by_main[n]:
                problems.append(
                    f"{n}: the last frame shows {last[n]} tasks, its statistics "
                    f"{own[n]}, the main master's {by_main[n]}"
                )
    mid = [p for _, p in overview if not p[0] and p[1] and 0 < p[1] < main["wall_s"]]
    if not mid:
        problems.append("no frame taken mid-run")
    for _, t, _, rows in mid:
        for n in names:
            expected = done_at(curves.get(n, [(0.0, 0)]), t)
            slack = rates[n] * refresh_s + 1
            if abs(rows[n] - expected) > slack:
                problems.append(
                    f"{n} at t {t} s: the frame shows {rows[n]} tasks, the timeline "
                    f"{expected:.0f} (slack {slack:.0f})"
                )
    for p in problems:
        print(f"watch: {p}", file=sys.stderr)
    matches = not problems
    print(
        f"frames={distinct} distinct_done={len(set(totals))} clusters={len(names)} "
        f"matches={'true' if matches else 'false'} mid_run_frames={len(mid)}"
    )


# The terminal's 16 colours (xterm's), and the page of a capture.
PALETTE = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd",
           "#e5e5e5", "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff",
           "#00ffff", "#ffffff"]
FG, BG = "#e5e5e5", "#1e1e1e"


def colour(code):
    if 30 <= code <= 37:
        return PALETTE[code - 30]
    if 90 <= code <= 97:
        return PALETTE[code - 90 + 8]
    return None


def to_html(capture):
    out = []
    for line in capture.splitlines():
        state = {"fg": None, "bg": None, "bold": False, "dim": False, "rev": False}
        spans = []
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            end = m.start() if m else len(line)
            text = line[pos:end]
            if text:
                fg, bg = state["fg"] or FG, state["bg"] or BG
                if state["rev"]:
                    fg, bg = bg, fg
                style = f"color:{fg};background:{bg}"
                if state["bold"]:
                    style += ";font-weight:bold"
                if state["dim"]:
                    style += ";opacity:.6"
                spans.append(f'<span style="{style}">{html.escape(text)}</span>')
            if not m:
                break
            pos = m.end()
            codes = [int(c) for c in m.group(1).split(";") if c] or [0]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    state = {"fg": None, "bg": None, "bold": False, "dim": False, "rev": False}
                elif c == 1:
                    state["bold"] = True
                elif c == 2:
                    state["dim"] = True
                elif c == 7:
                    state["rev"] = True
                elif c == 22:
                    state["bold"] = state["dim"] = False
                elif c == 27:
                    state["rev"] = False
                elif c == 39:
                    state["fg"] = None
                elif c == 49:
                    state["bg"] = None
                elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                    n = codes[i + 2]
                    key = "fg" if c == 38 else "bg"
                    state[key] = PALETTE[n] if n < 16 else None
                    i += 2
                elif colour(c):
                    state["fg"] = colour(c)
                elif colour(c - 10):
                    state["bg"] = colour(c - 10)
                i += 1
        out.append("".join(spans))
    body = "\n".join(out)
    return (
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>"
        f"body{{margin:0;background:{BG};overflow:hidden}}"
        f"pre{{margin:0;padding:8px;font:15px/1.2 'DejaVu Sans Mono',monospace;color:{FG};"
        f"background:{BG};display:inline-block}}"
        f"</style></head><body><pre>{body}</pre></body></html>\n"
    )


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "html":
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            f.write(to_html(open(sys.argv[2], encoding="utf-8").read()))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
