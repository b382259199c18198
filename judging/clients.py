"""The one module that talks to the outside: OpenAI-compatible chat endpoints and local scoring models.

Everything else in the judging app calls these functions, so nothing else makes
network calls or loads weights, and tests replace the outside in one place (a
real HTTP server on loopback, a tiny model saved to a temporary directory).
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- chat endpoints (helper CLIENT)

# ----------------------------------------------------------------------------- local NLI models (helper NLI)
