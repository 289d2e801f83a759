"""The engine: the tick pipeline (`tick`) and what it runs on (`runtime`, `gate`, `fire`,
`recovery`, `upkeep`, `writer`, `result`), the ticker, a manual run, the marks of only_if_changed."""
