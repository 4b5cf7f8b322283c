"""gpubench tools: read the JSON that `bench` writes and turn it into reports and comparisons."""

__version__ = "0.1.0"
