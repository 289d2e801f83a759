"""Agent state: the hook agents call, `rk agent state`, and `rk agent setup`."""
