"""The host: files written crash-safe, guarded YAML, the clock, processes, locks, nudges."""
