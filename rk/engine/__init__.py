"""The engine: the tick pipeline, the ticker, a manual run, the marks of only_if_changed."""
