"""The real-agent suite and its lab: harness, mocks, and the screen recorders."""
