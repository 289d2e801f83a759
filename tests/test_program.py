"""Which program a pane's keyboard reaches, from its process tree (pure rules),
how the table is read from /proc and ps, and how the kind feeds the reconciler
and the look: a screen confirms an agent the tree shows, never makes one."""

from __future__ import annotations

from rk.core.pane.facts import PaneFact, PaneKind, ProcessInfo, Source, panes_concerned, reconcile, refusal
from rk.core.pane.look import corrected, correction, needs_look, seen_before_typing
from rk.core.pane.program import Proc, Program, agent_of, judge, operand, short_argv
from rk.core.pane.screen import Screen
from rk.core.schedule.entry import Entry, Every, Target, WakeOn
from rk.host.process import MAX_ARGV, MAX_CMDLINE, parse_proc, parse_ps, read_table

TTY = 34816
ROOT = 100


def table(*procs: Proc) -> dict[int, Proc]:
    return {p.pid: p for p in procs}


def proc(pid, ppid, pgrp, *argv, comm="", state="S", tty=TTY, fg=0) -> Proc:
    """A process on the pane's tty whose foreground group is `fg` (default: its own group)."""
    name = comm or (argv[0].rpartition("/")[2].lstrip("-") if argv else "")
    return Proc(pid, ppid, pgrp, tty, fg or pgrp, state, name[:15], tuple(argv))


def with_fg(fg: int, *procs: Proc) -> dict[int, Proc]:
    """The table with every process's tpgid set to `fg` (the kernel reports the tty's, for each)."""
    return {p.pid: Proc(p.pid, p.ppid, p.pgrp, p.tty, fg, p.state, p.comm, p.argv) for p in procs}


SHELL = proc(ROOT, 1, ROOT, "-bash")


def fg_job(*argv_by_pid: tuple[int, int, tuple[str, ...], str]) -> dict[int, Proc]:
    """A login bash (pid 100) with one foreground job: (pid, ppid, argv, comm) rows, the
    first of which leads the job's group."""
    leader = argv_by_pid[0][0]
    procs = [SHELL] + [proc(pid, ppid, leader, *argv, comm=comm) for pid, ppid, argv, comm in argv_by_pid]
    return with_fg(leader, *procs)


def kind_of(t: dict[int, Proc], own=()) -> tuple[PaneKind, str]:
    judged = judge(t, ROOT, own)
    assert judged is not None
    return judged.kind, judged.name


# -- the rules of rk.core.pane.program


def test_a_shell_at_its_prompt_is_a_shell():
    assert kind_of(with_fg(ROOT, SHELL)) == (PaneKind.SHELL, "bash")
    rc = proc(ROOT, 1, ROOT, "bash", "--noprofile", "--rcfile", "/tmp/rc", "-i")
    assert kind_of(with_fg(ROOT, rc)) == (PaneKind.SHELL, "bash")  # an option's value is no script
    inner = fg_job((200, ROOT, ("zsh",), ""))
    assert kind_of(inner) == (PaneKind.SHELL, "zsh")


def test_repls_are_programs_named_by_their_process():
    assert kind_of(fg_job((200, ROOT, ("python3",), ""))) == (PaneKind.PROGRAM, "python3")
    assert kind_of(fg_job((200, ROOT, ("node",), ""))) == (PaneKind.PROGRAM, "node")
    ipython = fg_job((200, ROOT, ("/usr/bin/python3", "/usr/bin/ipython"), "ipython"))
    assert kind_of(ipython) == (PaneKind.PROGRAM, "python3")
    assert judge(ipython, ROOT).argv == "python3 /usr/bin/ipython"
    assert kind_of(fg_job((200, ROOT, ("python3", "-m", "asyncio"), ""))) == (PaneKind.PROGRAM, "python3")
    assert kind_of(fg_job((200, ROOT, ("node", "-e", "require('repl').start()"), ""))) == (PaneKind.PROGRAM, "node")
    assert kind_of(fg_job((200, ROOT, ("vim", "claude"), ""))) == (PaneKind.PROGRAM, "vim")  # an editor's file


def test_agents_by_name_script_or_package():
    assert kind_of(fg_job((200, ROOT, ("claude",), ""))) == (PaneKind.AGENT, "claude")
    assert kind_of(fg_job((200, ROOT, ("/home/u/.local/bin/opencode",), ""))) == (PaneKind.AGENT, "opencode")
    node_claude = ("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js")
    assert judge(fg_job((200, ROOT, node_claude, "node")), ROOT) == Program(
        PaneKind.AGENT, 200, "node", "node …/claude-code/cli.js", "claude"
    )
    bin_link = ("node", "/home/u/.npm-global/bin/claude", "--resume")  # the npm bin link, through its #!
    assert judge(fg_job((200, ROOT, bin_link, "node")), ROOT).agent == "claude"
    gemini = ("node", "--no-warnings=DEP0040", "/opt/lib/node_modules/@google/gemini-cli/dist/index.js")
    assert judge(fg_job((200, ROOT, gemini, "node")), ROOT).agent == "gemini"
    # Codex from npm: node runs codex.js, which spawns the native codex (the deeper one is named)
    codex = fg_job(
        (200, ROOT, ("node", "/opt/lib/node_modules/@openai/codex/bin/codex.js"), "node"),
        (201, 200, ("/opt/lib/node_modules/@openai/codex/vendor/x86_64/codex/codex",), "codex"),
    )
    assert judge(codex, ROOT) == Program(PaneKind.AGENT, 201, "codex", "codex", "codex")
    assert agent_of(proc(1, 0, 1, "python3", "-m", "aider")) == "aider"
    assert agent_of(proc(1, 0, 1, "node", "/srv/app/server.js", "--name", "claude")) == ""  # only the script


def test_wrappers_are_walked_to_the_agent_below():
    npx = fg_job(
        (200, ROOT, ("npm", "exec", "@anthropic-ai/claude-code"), "npm exec @anth"),
        (201, 200, ("sh", "-c", "claude"), "sh"),
        (202, 201, ("node", "/home/u/.npm/_npx/1f/node_modules/.bin/claude"), "node"),
    )
    assert judge(npx, ROOT).pid == 202 and judge(npx, ROOT).kind == PaneKind.AGENT
    script = fg_job((200, ROOT, ("sh", "./start-agent.sh"), "sh"), (201, 200, ("claude", "--continue"), "claude"))
    assert judge(script, ROOT).pid == 201 and judge(script, ROOT).kind == PaneKind.AGENT
    uv = fg_job(
        (200, ROOT, ("uv", "run", "--with", "x", "aider"), ""), (201, 200, ("python3", "/v/bin/aider"), "aider")
    )
    assert judge(uv, ROOT).kind == PaneKind.AGENT
    env = fg_job((200, ROOT, ("env", "-u", "X", "FOO=1", "claude"), "env"))  # before it execs
    assert judge(env, ROOT).agent == "claude"
    npx_early = fg_job((200, ROOT, ("npx", "-y", "@openai/codex@latest"), "npx"))  # still fetching
    assert judge(npx_early, ROOT).agent == "codex"
    assert operand(proc(1, 0, 1, "npm", "exec", "--yes", "--", "@google/gemini-cli")) == "@google/gemini-cli"


def test_below_a_wrapper_the_program_is_the_deepest_that_is_not_one():
    wrapped = fg_job((200, ROOT, ("bash", "-c", "cat > f; true"), "bash"), (201, 200, ("cat",), ""))
    assert kind_of(wrapped) == (PaneKind.PROGRAM, "cat")
    repl = fg_job((200, ROOT, ("uv", "run", "python"), ""), (201, 200, ("/w/.venv/bin/python",), "python"))
    assert kind_of(repl) == (PaneKind.PROGRAM, "python")
    # sh -c "claude; python3" after claude exited: the shell's command line names no agent
    after = fg_job((200, ROOT, ("sh", "-c", "claude; python3"), "sh"), (202, 200, ("python3",), ""))
    assert kind_of(after) == (PaneKind.PROGRAM, "python3")
    # a script waiting for input, with nothing below it: the script is the program
    assert kind_of(fg_job((200, ROOT, ("sh", "./ask.sh"), ""))) == (PaneKind.PROGRAM, "sh")


def test_an_agent_behind_its_shell_is_not_what_the_keyboard_reaches():
    stopped = proc(300, ROOT, 300, "claude", state="T")
    assert kind_of(with_fg(ROOT, SHELL, stopped)) == (PaneKind.SHELL, "bash")  # Ctrl-Z: the prompt is back
    repl = proc(400, ROOT, 400, "python3")
    assert kind_of(with_fg(400, SHELL, stopped, repl)) == (PaneKind.PROGRAM, "python3")  # a REPL in front of it
    other_tty = Proc(500, ROOT, ROOT, TTY + 1, ROOT, "S", "claude", ("claude",))
    assert kind_of(with_fg(ROOT, SHELL) | {500: other_tty}) == (PaneKind.SHELL, "bash")  # not on this terminal


def test_rk_itself_is_never_the_panes_program():
    rk = (200, ROOT, ("/home/u/.venv/bin/python3", "/home/u/.venv/bin/rk", "cron", "add", "x"), "rk")
    assert kind_of(fg_job(rk)) == (PaneKind.PROGRAM, "python3")  # as anyone else would see it
    assert kind_of(fg_job(rk), own=[200]) == (PaneKind.SHELL, "bash")  # rk asking about its own pane
    # through a launcher (uv run rk): the launcher goes too
    launched = fg_job((200, ROOT, ("uv", "run", "rk", "cron", "add"), "uv"), (201, 200, ("python3", "-m", "rk"), ""))
    assert kind_of(launched, own=[201]) == (PaneKind.SHELL, "bash")
    # rk run by an agent in the agent's own group: the agent stays the pane's
    in_agent = fg_job(
        (200, ROOT, ("claude",), ""), (201, 200, ("bash", "-c", "rk cron add"), ""), (202, 201, rk[2], "rk")
    )
    assert kind_of(in_agent, own=[202]) == (PaneKind.AGENT, "claude")
    # rk run from a REPL (os.system): the REPL stays the pane's program
    from_repl = fg_job(
        (200, ROOT, ("python3",), ""), (201, 200, ("sh", "-c", "rk cron add x"), ""), (202, 201, rk[2], "rk")
    )
    assert kind_of(from_repl, own=[202]) == (PaneKind.PROGRAM, "python3")
    # rk in a pipe with a pager: the pager reads the keyboard
    piped = fg_job(rk, (201, ROOT, ("less",), ""))
    assert kind_of(piped, own=[200]) == (PaneKind.PROGRAM, "less")


def test_no_verdict_without_the_root_or_a_terminal():
    assert judge({}, ROOT) is None
    assert judge({ROOT: Proc(ROOT, 1, ROOT, 0, -1, "S", "bash", ("bash",))}, ROOT) is None
    zombie = fg_job((200, ROOT, ("python3",), ""))
    zombie[200] = Proc(200, ROOT, 200, TTY, 200, "Z", "python3", ())
    assert judge(zombie, ROOT) is None  # the group is only a zombie: nothing reads the keyboard


def test_short_argv():
    p = proc(7, 1, 7, "node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "--resume")
    assert short_argv(p) == "node …/claude-code/cli.js --resume"
    assert len(short_argv(proc(7, 1, 7, "x", *["word"] * 40))) == 60


# -- the kind in the reconciler and the look


def _none(_pid):
    return ProcessInfo()


def _front(pid):
    return ProcessInfo(alive=True, tty=7, pgrp=pid, tpgid=pid)


REPL = Program(PaneKind.PROGRAM, 4242, "python3", "python3")
AGENT = Program(PaneKind.AGENT, 77, "node", "node …/claude-code/cli.js", "claude")
A_SHELL = Program(PaneKind.SHELL, 10, "bash", "bash")


def test_the_tree_decides_and_a_hook_pid_in_front_still_vouches():
    pane = PaneFact("%1", command="python3", tty=7)
    repl = reconcile(pane, "", "", "", _none, "", REPL)
    assert (repl.kind, repl.program, repl.program_pid) == (PaneKind.PROGRAM, "python3", 4242)
    assert refusal(repl) == "no agent in pane (python3)"
    node = reconcile(PaneFact("%1", command="node", tty=7), "", "", "", _none, "", AGENT)
    assert (node.kind, node.provider, node.program_argv) == (PaneKind.AGENT, "claude", "node …/claude-code/cli.js")
    # tmux says python (rk itself), the tree says the shell that started it
    own = reconcile(PaneFact("%1", command="python", tty=7), "", "", "", _none, "", A_SHELL)
    assert refusal(own) == "shell in pane"
    # a recorded agent pid in front of the pane beats the tree's name for it
    hooked = reconcile(PaneFact("%1", command="bash", tty=7), "idle:5:55", "", "claude:s", _front, "", REPL)
    assert (hooked.kind, hooked.state) == (PaneKind.AGENT, "idle")


def test_a_screen_written_state_never_makes_a_repl_an_agent():
    pane = PaneFact("%1", command="python3", tty=7)
    # the look of an earlier tick wrote `idle` (no pid) from the agent's last frame
    screen_state = reconcile(pane, "idle:50", "", "", _none, Source.SCREEN + ":50", REPL)
    assert (screen_state.kind, screen_state.state, screen_state.source) == (PaneKind.PROGRAM, "", "")
    # also when the tree cannot be read: the command alone, never the screen's word
    fallback = reconcile(pane, "idle:50", "", "", _none, Source.SCREEN + ":50", None)
    assert (fallback.kind, fallback.state) == (PaneKind.PROGRAM, "")
    # a state reported by hand (no pid) is the program's own: it counts
    manual = reconcile(pane, "idle:50", "", "", _none, Source.MANUAL + ":50", REPL)
    assert (manual.kind, manual.state) == (PaneKind.AGENT, "idle")
    # a screen-written state on an agent the tree shows (no hooks) stays
    hookless = reconcile(PaneFact("%1", command="claude"), "idle:50", "", "", _none, "screen:50", AGENT)
    assert (hookless.kind, hookless.state) == (PaneKind.AGENT, "idle")
    # without the tree, the command still names shells and agents
    assert reconcile(PaneFact("%1", command="zsh"), "", "", "", _none).kind == PaneKind.SHELL
    assert reconcile(PaneFact("%1", command="codex"), "", "", "", _none).kind == PaneKind.AGENT


def test_the_look_leaves_repls_alone_and_never_promotes():
    now = 1000
    repl = PaneFact("%1", command="python3", kind=PaneKind.PROGRAM, program="python3")
    assert not needs_look(repl, now)
    assert not needs_look(PaneFact("%1", command="node", kind=PaneKind.PROGRAM), now)
    frame = Screen("claude", "idle")  # an agent's last frame left on screen
    fix = correction(repl, frame, now, settled=True)
    after = corrected(repl, fix)
    assert (after.kind, after.state, after.source) == (PaneKind.PROGRAM, "", "")
    seen = seen_before_typing(repl, frame, now)
    assert seen.refused == "no agent in pane (python3)"
    # an agent the tree shows is confirmed (and corrected) by its screen
    agent = PaneFact("%2", command="node", kind=PaneKind.AGENT, agent="codex")
    assert needs_look(agent, now)
    confirmed = corrected(agent, correction(agent, Screen("codex", "idle"), now, settled=True))
    assert (confirmed.kind, confirmed.state, confirmed.source) == (PaneKind.AGENT, "idle", "screen")
    assert seen_before_typing(confirmed, Screen("codex", "idle"), now).refused == ""


def _entry(target: Target, wake: bool = False) -> Entry:
    return Entry(id="e1", schedule=Every(30), target=target, payload="hi", wake_on=WakeOn() if wake else None)


def test_only_the_panes_that_matter_are_judged():
    panes = [
        PaneFact("%1", window_id="@1", role="worker"),
        PaneFact("%2", window_id="@1"),
        PaneFact("%3", window_id="@2", session_ref="claude:s9"),
        PaneFact("%4", window_id="@3"),
        PaneFact("%5", window_id="@3", dead=True),
    ]
    assert panes_concerned([_entry(Target("pane", "%4"))], panes) == {"%4"}
    assert panes_concerned([_entry(Target("role", "worker"))], panes) == {"%1", "%2"}
    assert panes_concerned([_entry(Target("session", "s9"))], panes) == {"%3"}
    assert panes_concerned([], panes) == set()
    assert panes_concerned([_entry(Target("pane", "%4"), wake=True)], panes) == {"%1", "%2", "%3", "%4"}


# -- reading the table


def test_proc_records_parse_odd_names_and_command_lines():
    stat = "4242 (my (odd) prog) S 100 4242 4242 34816 4242 4194304 0 0"
    got = parse_proc(4242, stat, b"node\0/x/@openai/codex/bin/codex.js\0--yolo\0", "my (odd) prog\n")
    assert got == Proc(
        4242, 100, 4242, 34816, 4242, "S", "my (odd) prog", ("node", "/x/@openai/codex/bin/codex.js", "--yolo")
    )
    assert parse_proc(1, "1 (x) Z 0 1 1 0 -1 0").state == "Z"
    assert parse_proc(1, "1 (kthread) S 0 0 0 0 -1 0", b"").argv == ()  # a kernel thread: no argv
    assert parse_proc(1, "garbage") is None
    assert parse_proc(1, "1 (x) S a b c d e f") is None
    titled = parse_proc(9, "9 (npm exec claude) S 1 9 9 34816 9 0", b"npm exec claude" + b"\0" * 60)
    assert titled is not None and titled.argv == ("npm", "exec", "claude")  # node's title over its argv
    huge = parse_proc(9, "9 (x) S 1 9 9 34816 9 0", b"a\0" * 10_000)
    assert huge is not None and len(huge.argv) == MAX_ARGV == 64
    long = parse_proc(9, "9 (x) S 1 9 9 34816 9 0", b"y" * (3 * MAX_CMDLINE) + b"\0")
    assert long is not None and long.argv == ("y" * MAX_CMDLINE,)  # read up to MAX_CMDLINE bytes


def _fake_proc(root, pid, stat, cmdline=b"", comm=""):
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "stat").write_text(stat)
    (d / "cmdline").write_bytes(cmdline)
    (d / "comm").write_text(comm + "\n")


def test_the_table_keeps_only_the_terminals_asked_about(tmp_path):
    root = tmp_path / "proc"
    (root / "self").mkdir(parents=True)
    (root / "self" / "stat").write_text("1 (x) S 0 1 1 0 -1 0")
    _fake_proc(root, 100, "100 (bash) S 1 100 100 34816 200 0", b"-bash\0", "bash")
    _fake_proc(root, 200, "200 (python3) S 100 200 100 34816 200 0", b"python3\0", "python3")
    _fake_proc(root, 300, "300 (sshd) S 1 300 300 0 -1 0", b"sshd\0", "sshd")
    _fake_proc(root, 400, "400 (vim) S 1 400 400 34817 400 0", b"vim\0", "vim")
    (root / "meminfo").write_text("not a pid")
    got = read_table({34816}, proc_root=str(root))
    assert sorted(got) == [100, 200]
    assert judge(got, 100) == Program(PaneKind.PROGRAM, 200, "python3", "python3")
    assert read_table({0}, proc_root=str(root)) == {}  # nothing asked: nothing read
    assert sorted(read_table({34816, 34817}, proc_root=str(root))) == [100, 200, 400]


def test_ps_output_parses_where_there_is_no_proc():
    out = (
        "  100     1   100   200 Ss   pts/3    -bash\n"
        "  200   100   200   200 S+   pts/3    node /usr/lib/node_modules/@openai/codex/bin/codex.js\n"
        "  300     1   300    -1 Ss   ?        /usr/sbin/sshd -D\n"
        "garbage\n"
    )
    got = parse_ps(out, {"pts/3": TTY})
    assert sorted(got) == [100, 200, 300]
    assert got[300].tty == 0
    assert judge(got, 100) == Program(PaneKind.AGENT, 200, "node", "node …/codex/bin/codex.js", "codex")


def test_titles_and_exe_names():
    npx = fg_job(
        (200, ROOT, ("npm exec claude",), "npm exec claude"),  # node's process.title over its argv
        (201, 200, ("sh", "-c", "claude"), "sh"),
        (202, 201, ("/c/node_modules/.bin/claude",), "claude"),
    )
    assert npx[200].argv == ("npm", "exec", "claude")
    assert judge(npx, ROOT).pid == 202
    native = fg_job((200, ROOT, ("/c/node_modules/@anthropic-ai/claude-code/bin/claude.exe",), "claude.exe"))
    assert judge(native, ROOT).agent == "claude"
    title_only = fg_job((200, ROOT, ("npm exec @openai/codex",), "npm exec @open"))  # still fetching
    assert judge(title_only, ROOT).agent == "codex"
