"""The omp half of the compatibility suite: its harness (harness.ts) and what its tests write (cases.py)."""
