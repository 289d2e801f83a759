"""Claude Code's screen (2.1.197 and 2.1.332), as captured from the real CLI
(tests/fixtures/screens/claude, claude-2.1.332).

The live composer is `❯` + NBSP between two rules, continuation lines
indented by two; past prompts above it are `❯ <text>` on a grey band. The
footer says `? for shortcuts` when the composer is empty and `esc to
interrupt` while a turn runs; the spinner line is a glyph and a gerund with
an ellipsis (`✢ Ionizing…`), which becomes `✻ Crunched for 0s` when the turn
ends. Dialogs replace the composer. A limit is the result of the last turn
(`⎿ You've hit your session limit · resets 2:57pm (UTC)`, `API Error: Request
rejected (429) · … rate limit …`); the footer's "You've used 92% of your
session limit" is only a warning. Placeholders in the composer are faint.
A reply's text is in the default ink under a `●`, indented by two; only
Claude's own lines start at the margin (the spinner, past prompts, entries).
2.1.332 draws on the alternate screen, ends a turn with `✻ Brewed for 0s ·
done 7:08 AM`, shows `◐ medium · /effort` above the rule, numbers a fourth
dialog option ("switch to auto mode", so "No" is 4), keeps `✳` in the title
while working (no braille spinner), and on a subscription limit offers to
continue by itself: `● Usage limit reached · set to continue automatically
at 10:16am` and, in the footer, `⚠ Usage limit reached · limit resets
10:16am` / `Continuing automatically at 10:16am · Esc to cancel`.
"""

from rk.core.pane.screen.engine import Layout

LAYOUT = Layout(
    agent="claude",
    identify=(
        r"^❯( |$)",
        r"Claude Code v\d",
        r"Do you want to proceed\?",
        r"^ *❯ \d+\. ",
        r"Esc to cancel · Tab to amend",
    ),
    composer=r"^❯(?: (?P<text>.*))?$",
    composer_more=r"^  (?P<text>.*)$",
    composer_end=r"^─{10,}",
    turn_start=r"^❯ (?!/)\S",  # a past prompt; a slash command (/rate-limit-options) starts no turn
    # the status line: a spinner glyph at the margin (`✶ Frosting…`, `✻ Brewed for 0s`), above
    # the composer's rule, past indented lines (a tip, a queued prompt, the effort hint)
    status=(r"^[✻✶✽✢✳·*] ",),
    status_skip=r"^(─{10,}.*|\s.*|)$",
    status_reach=8,
    working=(r"esc to interrupt", r"^[✻✶✽✢✳·*] \S[^…]*…"),
    working_below=True,  # the footer's "esc to interrupt"
    dialog=(
        r"Do you want to proceed\?",
        r"Do you want to (make|allow|create|run)",
        r"^ *❯ \d+\. ",
        r"^ +❯ \S",  # an unnumbered menu (2.1.332's "Make auto mode your default…?" at launch)
        r"^ *Esc to cancel",  # not the footer's "Continuing automatically at 10:16am · Esc to cancel"
        r"Enter to confirm",
    ),
    dialog_top=r"^─{10,}",  # a dialog is drawn below a rule, in place of the composer
    limit=(
        r"You[’']ve hit your .*limit",
        r"(?i)usage limit reached",
        r"(?i)limit will reset",
        r"(?i)\b(session|weekly|opus|5-hour) limit reached",
        r"API Error: .*\(429\)",
        r"API Error: .*(rate.?limit|usage limit)",
        r"(?i)stop and wait for limit to reset",
    ),
    entry=r"^(● |  ⎿  )",  # a reply, a tool call or an error; a tool's result
    note_fg=frozenset({"5;246"}),  # grey: "Interrupted", a tip, "Automatic continue cancelled"
    reply_fg=frozenset({"5;231", "2;255;255;255"}),  # a reply's white `●`; an error's is its own colour
    limit_ink=True,  # errors are coloured (220, 211), a reply's text is in the default ink
    limit_below=True,  # 2.1.332: "⚠ Usage limit reached · limit resets 10:16am" in the footer
    # 2.1.332 continues by itself after the reset: "Continuing automatically at 10:16am" (or
    # "… when it resets") before it, "Continuing shortly" from the reset until it does
    resumes=(r"^\s*Continuing automatically\b", r"^\s*Continuing shortly\b"),
    title_busy=(r"^[\u2801-\u28ff] ",),  # a braille spinner while a turn runs (even when the screen looks idle)
    placeholder_dim=True,
    placeholder_text=(r"Press up to edit queued messages",),
    # the turn's summary (`✻ Churned for 3s`, 2.1.332's `… · done 11:24 AM`), drawn after the Stop hooks
    turn_noise=(r"^[✻✶✽✢✳·*] \S+ for \d+(?:\.\d+)?(?:ms|[smh])\b",),
)
