"""Other machines: the hosts rk reaches over the user's own ssh, as pure data and rules."""
