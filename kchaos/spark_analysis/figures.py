"""What every plot of a report shares: how a figure becomes an inline image.

Reports are single files that must open offline (CI artifacts, bug reports), so each plot is a base64
PNG in the page. Figures are drawn on matplotlib's Agg canvas directly, not through pyplot: no global
figure state, no display, safe in threads and on headless CI machines.
"""

from __future__ import annotations

import base64
import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def png_base64(fig: Figure) -> str:
    """The figure, laid out, as a base64 PNG for an `<img src="data:image/png;base64,...">`."""
    FigureCanvasAgg(fig)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")
