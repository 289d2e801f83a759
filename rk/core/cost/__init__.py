"""What prompts cost: caps, usage budgets, skipping when nothing changed, turn timeouts."""
