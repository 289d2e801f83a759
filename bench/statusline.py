"""How long `rk status --format tmux` takes: a status bar runs it every status-interval.

Times whole processes (median of --runs interleaved runs, after warm-up runs;
`bench/_startup.py`), bytecode cached as an installed rk has it:

- `python -c pass` with the interpreter the rk script runs on (the floor);
- `tmux list-panes -a` (the other floor: the one tmux client the segment needs);
- `rk status --format tmux` with no tmux server (the ticker's files only);
- the same inside "tmux": $TMUX names a private throwaway tmux server with
  --panes panes, one of them waiting, so one `list-panes` runs and is parsed;
- the same with the fleet part on: a state dir whose `fleet.status` (what the
  ticker keeps with `status_line: {fleet: true}`) names --hosts hosts, one down
  and one stale: one more small file read, no ssh.

Target: under 20 ms (on a loaded machine, compare with the two floors printed:
rk's own share is the time above the interpreter plus one tmux client).
With --baseline RK the same cases run with another rk script in the same turns.

Usage: python bench/statusline.py [--runs N] [--panes N] [--hosts N] [--baseline RK]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _startup import Case, Rig, add_arguments, floor_for, floors, header, measure, report, runs_and_scripts

TARGET_MS = 20.0
TOOL = "bench/statusline.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--hosts", type=int, default=5, help="hosts in the fleet part (past 5: summed)")
    args = parser.parse_args()
    runs, scripts = runs_and_scripts(args, TOOL)
    with Rig(TOOL, panes=args.panes) as rig:
        rig.tmux("set-option", "-p", "-t", rig.pane, "@rk_pane_agent_state", f"waiting:{int(time.time())}")
        fleet_env = {**rig.inside(), "RK_STATE_DIR": fleet_state(rig.tmp, args.hosts)}
        table = floors(list(scripts.values()), rig.env)
        table["tmux list-panes -a (the other floor)"] = Case(
            ["tmux", "-S", rig.socket, "list-panes", "-a", "-F", "#{@rk_pane_agent_state}"], rig.tmux_env, floor=""
        )
        for label, rk in scripts.items():
            argv = [rk, "status", "--format", "tmux"]
            floor = floor_for(rk, list(scripts.values()))
            table[f"{label}status --format tmux, no tmux"] = Case(argv, rig.env, floor=floor)
            table[f"{label}status --format tmux, {args.panes} panes"] = Case(argv, rig.inside(), floor=floor)
            table[f"{label}status --format tmux, {args.panes} panes, {args.hosts} hosts"] = Case(
                argv, fleet_env, floor=floor
            )
        header("rk status --format tmux timing", runs, list(scripts.values()))
        samples, shown = measure(table, runs, TOOL)

    def judge(name: str, ms: float, ratio: float) -> str:
        return f"{'met' if ms < TARGET_MS else 'NOT met'}: <{TARGET_MS:g} ms"

    ok = report(table, samples, judge)
    print(f"  (the last segment: {shown[f'status --format tmux, {args.panes} panes']!r})")
    print(f"  (with the fleet: {shown[f'status --format tmux, {args.panes} panes, {args.hosts} hosts']!r})")
    print("target met" if ok else "target NOT met")
    return 0


def fleet_state(tmp: str, hosts: int) -> str:
    """A state dir of its own whose `fleet.status` names `hosts` hosts (the first down,
    the second stale, the rest live with agents)."""
    state = os.path.join(tmp, "fleet-state")
    os.makedirs(state, mode=0o700)
    now = int(time.time())
    record: dict[str, object] = {"stale_after": 75, "hosts": {}}
    for i in range(hosts):
        item = {"at": now, "tried": now, "problem": "", "counts": {"active": i % 4, "idle": 2, "waiting": i % 2}}
        if i == 0:
            item = {"at": 0, "tried": now, "problem": "unreachable: Connection refused"}
        elif i == 1:
            item = {**item, "at": now - 3600, "tried": now - 3600}
        record["hosts"][f"host{i}"] = item  # type: ignore[index]
    with open(os.path.join(state, "fleet.status"), "w") as f:
        json.dump(record, f)
    return state


if __name__ == "__main__":
    sys.exit(main())
