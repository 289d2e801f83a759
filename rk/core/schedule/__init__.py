"""Schedules and what fires: entries, due(), cron, the ladder, wakes, hours, the forecast."""
