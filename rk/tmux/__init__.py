"""tmux: the command layer, looking at panes, roles."""
