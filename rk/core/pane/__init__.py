"""What a pane holds: facts, the program, the screen, the look, identity, turns, payloads."""
