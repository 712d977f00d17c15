#!/usr/bin/env python3
"""A terminal capture (`tmux capture-pane -p -e`, the specs' `test-artifacts/*.ansi`) as a
PNG, for the pictures of the docs: the cells drawn as HTML (true colour, 256 and 16 colours,
bold, italic, underline, reverse) and photographed by headless Chromium.

    python3 editors/nvim/scripts/ansi-to-png.py test-artifacts/nvim-restore-preview.ansi \
        docs/images/nvim-restore-preview.png [--cols 120]

Chromium: $CHROMIUM_PATH, else /usr/lib/chromium/chromium (scripts/setup-system.sh). Its
profile and HOME live in a temporary directory removed afterwards. Standard library only.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile

#: Neovim's default colour scheme (dark), for cells that set no colour.
DEFAULT_FG = (0xE0, 0xE2, 0xEA)
DEFAULT_BG = (0x14, 0x16, 0x1B)
#: The 16 colours of xterm.
BASIC = [
    (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
    (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255),
]  # fmt: skip
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][A-Za-z0-9])")
CELL_W, CELL_H, FONT_PX = 8.5, 17, 14


def xterm256(n: int) -> tuple[int, int, int]:
    """An xterm 256-colour index as RGB."""
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
    v = 8 + 10 * (n - 232)
    return v, v, v


class Pen:
    """The attributes of the cells being drawn."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.fg: tuple[int, int, int] | None = None
        self.bg: tuple[int, int, int] | None = None
        self.bold = self.italic = self.underline = self.reverse = False

    def apply(self, params: str) -> None:
        codes = [int(p) if p else 0 for p in re.split(r"[;:]", params)] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 2 and i + 4 < len(codes):
                    rgb = (codes[i + 2], codes[i + 3], codes[i + 4])
                    i += 4
                elif codes[i + 1] == 5 and i + 2 < len(codes):
                    rgb = xterm256(codes[i + 2])
                    i += 2
                else:
                    i += 1
                    continue
                if c == 38:
                    self.fg = rgb
                else:
                    self.bg = rgb
            elif c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASIC[c - 30]
            elif c == 39:
                self.fg = None
            elif 40 <= c <= 47:
                self.bg = BASIC[c - 40]
            elif c == 49:
                self.bg = None
            elif 90 <= c <= 97:
                self.fg = BASIC[c - 90 + 8]
            elif 100 <= c <= 107:
                self.bg = BASIC[c - 100 + 8]
            i += 1

    def style(self) -> str:
        fg, bg = self.fg or DEFAULT_FG, self.bg or DEFAULT_BG
        if self.reverse:
            fg, bg = bg, fg
        css = [f"color:#{fg[0]:02x}{fg[1]:02x}{fg[2]:02x}", f"background:#{bg[0]:02x}{bg[1]:02x}{bg[2]:02x}"]
        if self.bold:
            css.append("font-weight:bold")
        if self.italic:
            css.append("font-style:italic")
        if self.underline:
            css.append("text-decoration:underline")
        return ";".join(css)


def to_html(text: str, cols: int) -> tuple[str, int]:
    """The capture as an HTML page, and its number of lines. The pen carries over line ends,
    as tmux writes a line's attributes only where they change."""
    pen = Pen()
    lines = text.rstrip("\n").split("\n")
    out = []
    for line in lines:
        line = OTHER_ESCAPE.sub("", line.replace("\r", ""))
        spans, pos, width = [], 0, 0
        for m in SGR.finditer(line):
            chunk = line[pos : m.start()]
            if chunk:
                spans.append(f'<span style="{pen.style()}">{html.escape(chunk)}</span>')
                width += len(chunk)
            pen.apply(m.group(1))
            pos = m.end()
        chunk = line[pos:]
        if chunk:
            spans.append(f'<span style="{pen.style()}">{html.escape(chunk)}</span>')
            width += len(chunk)
        if width < cols:
            # the rest of the row in the background the line ended with
            spans.append(f'<span style="{pen.style()}">{" " * (cols - width)}</span>')
        out.append("".join(spans))
    bg = "#{:02x}{:02x}{:02x}".format(*DEFAULT_BG)
    page = (
        "<!doctype html><meta charset=utf-8><style>"
        f"html,body{{margin:0;background:{bg}}}"
        f"pre{{margin:0;padding:6px;font:{FONT_PX}px/{CELL_H}px 'DejaVu Sans Mono',monospace;white-space:pre;"
        "font-variant-ligatures:none}</style><pre>" + "\n".join(out) + "</pre>"
    )
    return page, len(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ansi", help="a capture (tmux capture-pane -p -e)")
    ap.add_argument("png", help="the picture to write")
    ap.add_argument("--cols", type=int, default=0, help="the terminal's width (default: the widest line)")
    args = ap.parse_args(argv)
    with open(args.ansi, encoding="utf-8", errors="replace") as f:
        text = f.read()
    cols = args.cols or max(len(SGR.sub("", OTHER_ESCAPE.sub("", line))) for line in text.split("\n"))
    page, rows = to_html(text, cols)
    chromium = os.environ.get("CHROMIUM_PATH", "/usr/lib/chromium/chromium")
    if not os.path.exists(chromium):
        print(
            f"Chromium not found at {chromium} (scripts/setup-system.sh, or set CHROMIUM_PATH)",
            file=sys.stderr,
        )
        return 2
    tmp = tempfile.mkdtemp(prefix="ansi-png-")
    try:
        src = os.path.join(tmp, "capture.html")
        with open(src, "w", encoding="utf-8") as f:
            f.write(page)
        width, height = int(cols * CELL_W) + 12, rows * CELL_H + 12
        out = os.path.abspath(args.png)
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--user-data-dir={os.path.join(tmp, 'profile')}",
                f"--window-size={width},{height}",
                f"--screenshot={out}",
                "file://" + src,
            ],
            check=True,
            env={**os.environ, "HOME": tmp},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {args.png} ({width}x{height})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
