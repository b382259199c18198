"""Geometry of the sensitivity line chart, drawn by the server as inline SVG. Pure: no Django imports.

x is the share of sentences replaced (0..100%), y the mean score (1..5); one
line per judge and type. A step with no scored judgement leaves a gap in its
line rather than a guessed point.
"""

from __future__ import annotations

from typing import Any

from judging.tables import judge_label

# Colour per judge (Okabe-Ito, readable by colour-blind readers); the type is told by the dash.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
DASHES = {"intrinsic": "", "extrinsic": "6 4"}
SCORE_LOW, SCORE_HIGH = 1.0, 5.0


def sensitivity_chart(
    sensitivity: dict[str, Any], *, width: int = 640, height: int = 320, margin: int = 48
) -> dict[str, Any]:
    """Coordinates for the template: axes, ticks, and per line its segments and points (with their values)."""
    percents = sensitivity["percents"]
    left, right, top, bottom = margin, width - margin // 2, margin // 2, height - margin
    span_x = max(percents[-1] - percents[0], 1) if percents else 1

    def x_of(percent: float) -> float:
        return round(left + (percent - percents[0]) / span_x * (right - left), 1)

    def y_of(score: float) -> float:
        return round(bottom - (score - SCORE_LOW) / (SCORE_HIGH - SCORE_LOW) * (bottom - top), 1)

    colours: dict[tuple[str, str], str] = {}
    lines = []
    for row in sensitivity["rows"]:
        colour = colours.setdefault((row["judge"], row["mode"]), PALETTE[len(colours) % len(PALETTE)])
        points = [{"x": x_of(step["percent"]), "y": y_of(step["mean"]), "percent": step["percent"],
                   "mean": step["mean"]} for step in row["steps"] if step["mean"] is not None]
        segments: list[list[str]] = [[]]
        for step in row["steps"]:
            if step["mean"] is None:
                segments.append([])
            else:
                segments[-1].append(f"{x_of(step['percent'])},{y_of(step['mean'])}")
        lines.append({
            "label": f"{judge_label(row['judge'], row['mode'])} · {row['type']}",
            "judge": row["judge"], "type": row["type"], "colour": colour, "dash": DASHES.get(row["type"], "2 3"),
            "segments": [" ".join(segment) for segment in segments if len(segment) > 1],
            "points": points,
        })
    return {
        "width": width, "height": height, "left": left, "right": right, "top": top, "bottom": bottom,
        "x_ticks": [{"x": x_of(percent), "label": f"{percent}%"} for percent in percents],
        "y_ticks": [{"y": y_of(score), "label": str(score)} for score in range(int(SCORE_LOW), int(SCORE_HIGH) + 1)],
        "lines": lines,
    }
