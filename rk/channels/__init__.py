"""Channels to operators and humans: MCP, notifications, the status line, events, await."""
