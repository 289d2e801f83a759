"""rk: a scheduler beside tmux that types prompts into agent panes.

This package's top level imports nothing on purpose: `rk agent hook` runs on
every agent event and must start in a few milliseconds.
"""

__version__ = "0.1.0"
