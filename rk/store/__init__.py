"""rk's files: config, entries, the delivery log, cursor, pause, the state journal, agents' transcripts."""
