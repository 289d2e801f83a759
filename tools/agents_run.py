"""`make test-agents`: the real-agent suite as two pytest runs side by side.

Eight tests wait on the real clock for minutes (a limit's printed reset, two minutes of
quiet: `@pytest.mark.long`), with an agent sitting idle: a few percent of a core each.
On the suite's workers they held two busy workers for 23 of its 27 minutes. Here they
run in a run of their own (`CLOCK_WORKERS` workers) beside the rest (`WORKERS`), so
the agents' TUIs still share 2 cores two at a time, as before, and the clock's waits
overlap them. The rest is shown as it runs; the clock's run, kept in a file, after it.

    python tools/agents_run.py [pytest args...]

Exit status: pytest's, the first run's that is not 0; a run that collected nothing
(5, an `ARGS` that selects no long test) counts as passed while the other ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

#: Tests with a `long` marker: they mostly wait on the real clock.
CLOCK = "agents and long"
REST = "agents and not long"
#: pytest's exit status when nothing was collected.
NO_TESTS = 5


def command(marks: str, workers: int, args: list[str]) -> list[str]:
    spread = ["-n", str(workers), "--dist", "load"] if workers else []
    return [sys.executable, "-m", "pytest", "-q", "-m", marks, *spread, "tests/agents", *args]


def main(args: list[str]) -> int:
    workers = int(os.environ.get("AGENT_WORKERS", "2"))
    clock_workers = int(os.environ.get("AGENT_CLOCK_WORKERS", "2"))
    if not workers:  # one by one, as asked: everything in one run
        return subprocess.call(command("agents", 0, args))
    with tempfile.TemporaryFile("w+") as kept:
        clock = subprocess.Popen(command(CLOCK, clock_workers, args), stdout=kept, stderr=subprocess.STDOUT)
        try:
            rest = subprocess.call(command(REST, workers, args))
        finally:
            waited = clock.wait()
        kept.seek(0)
        print(f"\n-- the tests on the real clock ({CLOCK}, {clock_workers} workers) --", flush=True)
        sys.stdout.write(kept.read())
    codes = [code for code in (rest, waited) if code != NO_TESTS] or [NO_TESTS]
    return next((code for code in codes if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
