"""Decisions for the channels: await, notices, MCP guardrails, the glance, tmux's status line."""
