"""The machinery of train.py: its configuration (config), the run folder and exact
resume (checkpoint), the callback that evaluates, snapshots and saves (callback), and
what the user sees while a run trains (progress)."""
