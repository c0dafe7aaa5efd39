"""Known-answer scoring and the screening pass mark (pure core)."""

import math

from core.screening import item_correct, screening_passed


def test_an_answer_within_the_tolerance_of_every_known_answer_is_right():
    gold, tolerance = {"a": 6.0, "b": 2.0}, {"a": 1.0}
    assert item_correct(gold, tolerance, {"a": 7.0, "b": 2.0, "c": 0.0})
    assert not item_correct(gold, tolerance, {"a": 7.0, "b": 3.0})  # b has tolerance 0
    assert not item_correct(gold, tolerance, {"a": 4.0, "b": 2.0})
    assert not item_correct(gold, tolerance, {"a": None, "b": 2.0})  # can't judge / skipped
    assert not item_correct(gold, tolerance, {"a": math.nan, "b": 2.0})
    assert not item_correct(gold, tolerance, {"b": 2.0})


def test_the_pass_mark_is_a_share_or_a_count():
    assert screening_passed(4, 5, pass_share=0.8, pass_count=None)
    assert not screening_passed(3, 5, pass_share=0.8, pass_count=None)
    assert screening_passed(2, 3, pass_share=2 / 3, pass_count=None)  # no rounding slip
    assert not screening_passed(4, 5, pass_share=1.0, pass_count=None)
    assert screening_passed(3, 5, pass_share=1.0, pass_count=3)
    assert screening_passed(2, 2, pass_share=1.0, pass_count=9)  # a count above the total: all
