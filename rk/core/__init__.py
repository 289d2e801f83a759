"""The pure core: decisions as functions of (entries, log lines, pane facts, now).

Nothing here touches tmux, files, processes or the clock: the shell reads
those and passes plain values in. The import contract in pyproject.toml
(checked by import-linter in `make test`) keeps it so.
"""
