"""Acting on panes: typing a prompt, interrupting a turn, an absent target."""
