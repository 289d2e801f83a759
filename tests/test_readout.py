"""`rk.core.pane.readout`: a pane's screen as words, whatever the capture held."""

from __future__ import annotations

from rk.core.pane.readout import screen_lines


def test_escapes_and_controls_never_reach_the_reader():
    captured = "\x1b[31mred alert\x1b[0m\n\x1b]0;a title\x07plain \x1b[1mbold\x1b[0m\a\n\x1bcreset\x7f\n"
    assert screen_lines(captured, 10) == ["red alert", "plain bold", "reset"]


def test_the_last_rows_without_the_blank_ones_below():
    captured = "one\n\ntwo  \nthree\n\n   \n"
    assert screen_lines(captured, 2) == ["two", "three"]
    assert screen_lines(captured, 10) == ["one", "", "two", "three"]
    assert screen_lines("\n\n", 5) == []
