"""Example graphs that ship with the package (the demo runs them)."""
