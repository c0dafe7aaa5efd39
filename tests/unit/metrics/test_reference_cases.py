"""Test vectors of the CoNLL-2012 reference scorer (conll/reference-coreference-scorers).

Transcribed by hand from test/TestCases.README and test/CorefMetricTestConfig.pm (cases TC-A-1 …
TC-N-6): each letter is a mention, a group of letters an entity; capital "B" is a mention distinct
from "b". Expected values are the exact fractions printed there. The reference scorer does not
align mentions, so these run through `score_clusters(..., align=False)`; the product's aligned
numbers are tested on documents below and in test_coref.py.
"""

import pytest

from core.metrics.coref import f1, score_clusters


def clusters(spec):
    return [set(group) for group in spec.split()]


def rp(r, p):
    return (r, p, f1(r, p))


def blanc(rc, pc, rn, pn):
    """Return BLANC (R, P, F) as the mean of its coreference and non-coreference parts."""
    return ((rc + rn) / 2, (pc + pn) / 2, (f1(rc, pc) + f1(rn, pn)) / 2)


TC_A = "a bc def"
ONE, ZERO = (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)

CASES = {
    "TC-A-1": (TC_A, "a bc def", {
        "MUC": ONE, "B3": ONE, "CEAFm": ONE, "CEAFe": ONE, "BLANC": ONE, "LEA": ONE}),
    "TC-A-2": (TC_A, "a de", {
        "MUC": rp(1 / 3, 1), "B3": rp(7 / 18, 1), "CEAFm": rp(3 / 6, 3 / 3),
        "CEAFe": rp(1.8 / 3, 1.8 / 2), "BLANC": blanc(1 / 4, 1 / 1, 2 / 11, 2 / 2),
        "LEA": rp((1 + 3 * (1 / 3)) / 6, (1 + 2) / 3)}),
    "TC-A-3": (TC_A, "a bcx defy z", {
        "MUC": rp(3 / 3, 3 / 5), "B3": rp(6 / 6, 55 / 108), "CEAFm": rp(6 / 6, 6 / 9),
        "CEAFe": rp((1 + 4 / 5 + 6 / 7) / 3, (1 + 4 / 5 + 6 / 7) / 4),
        "BLANC": blanc(4 / 4, 4 / 9, 11 / 11, 11 / 27),
        "LEA": rp((1 + 2 + 3) / 6, (1 + 3 * (1 / 3) + 4 * (3 / 6)) / 9)}),
    "TC-A-4": (TC_A, "a bcx dy z", {
        "MUC": rp(1 / 3, 1 / 3), "B3": rp(5 / 9, 17 / 42), "CEAFm": rp(4 / 6, 4 / 7),
        "CEAFe": rp((1 + 4 / 5 + 2 / 5) / 3, (1 + 4 / 5 + 2 / 5) / 4),
        "BLANC": blanc(1 / 4, 1 / 4, 5 / 11, 5 / 17),
        "LEA": rp((1 + 2 + 0) / 6, (1 + 3 * (1 / 3) + 2 * 0 + 0) / 7)}),
    "TC-A-5": (TC_A, "a bcxB dy z", {
        "MUC": rp(1 / 3, 1 / 4), "B3": rp(5 / 9, 5 / 16), "CEAFm": rp(4 / 6, 4 / 8),
        "CEAFe": rp((1 + 4 / 6 + 2 / 5) / 3, (1 + 4 / 6 + 2 / 5) / 4),
        "BLANC": blanc(1 / 4, 1 / 7, 5 / 11, 5 / 21),
        "LEA": rp((1 + 2 + 3 * 0) / 6, (1 + 4 * (1 / 6) + 2 * 0 + 1 * 0) / 8)}),
    "TC-A-6": (TC_A, "a bcx dy Bz", {
        "MUC": rp(1 / 3, 1 / 4), "B3": rp(5 / 9, 17 / 48), "CEAFm": rp(4 / 6, 4 / 8),
        "CEAFe": rp((1 + 4 / 5 + 2 / 5) / 3, (1 + 4 / 5 + 2 / 5) / 4),
        "BLANC": blanc(1 / 4, 1 / 5, 5 / 11, 5 / 23),
        "LEA": rp((1 + 2 + 3 * 0) / 6, (1 + 3 / 3 + 2 * 0 + 2 * 0) / 8)}),
    "TC-A-10": (TC_A, "a b c d e f", {
        "MUC": ZERO, "B3": rp(3 / 6, 6 / 6), "BLANC": blanc(0 / 4, 0, 11 / 11, 11 / 15),
        "LEA": rp(1 / 6, 1 / 6)}),
    "TC-A-11": (TC_A, "abcdef", {
        "MUC": rp(3 / 3, 3 / 5), "B3": rp(6 / 6, 7 / 18), "BLANC": blanc(4 / 4, 4 / 15, 0, 0),
        "LEA": rp((0 + 2 + 3) / 6, 6 * (4 / 15) / 6)}),
    "TC-A-12": (TC_A, "a x y c d e z", {
        "MUC": ZERO, "B3": rp(13 / 36, 4 / 7), "BLANC": blanc(0 / 4, 0, 5 / 11, 5 / 21),
        "LEA": rp(1 / 6, 1 / 7)}),
    "TC-A-13": (TC_A, "axycdez", {
        "MUC": rp(1 / 3, 1 / 6), "B3": rp(17 / 36, 6 / 49), "BLANC": blanc(1 / 4, 1 / 21, 0, 0),
        "LEA": rp((1 * 0 + 2 * 0 + 3 / 3) / 6, 7 * (1 / 21) / 7)}),
    "TC-B-1": ("ab cde", "bcx de", {
        "BLANC": blanc(1 / 4, 1 / 4, 2 / 6, 2 / 6), "LEA": rp((2 * 0 + 3 / 3) / 5, (3 * 0 + 2) / 5)}),
    "TC-C-1": ("ab cde fg", "bcx de fg", {
        "BLANC": blanc(2 / 5, 2 / 5, 10 / 16, 10 / 16),
        "LEA": rp((2 * 0 + 3 / 3 + 2) / 7, (3 * 0 + 2 + 2) / 7)}),
    "TC-D-1": ("12345 67 89ABC", "12345 6789ABC", {
        "MUC": rp(9 / 9, 9 / 10), "B3": rp(12 / 12, 16 / 21),
        "LEA": rp((5 + 2 + 5) / 12, (5 + 7 * (11 / 21)) / 12)}),
    "TC-E-1": ("12345 67 89ABC", "1234589ABC 67", {
        "MUC": rp(9 / 9, 9 / 10), "B3": rp(1, 7 / 12),
        "LEA": rp((5 + 2 + 5) / 12, (10 * (20 / 45) + 2) / 12)}),
    "TC-F-1": ("ABCD", "AB CD", {"MUC": rp(2 / 3, 2 / 2), "LEA": rp(4 * (2 / 6) / 4, (2 + 2) / 4)}),
    "TC-G-1": ("AB CD", "ABCD", {"MUC": rp(2 / 2, 2 / 3), "LEA": rp(1, (4 * 2 / 6) / 4)}),
    "TC-J-1": ("ABC", "AC", {"MUC": rp(1 / 2, 1 / 1), "LEA": rp((3 * 1 / 3) / 3, 1)}),
    "TC-K-1": ("BCDEGHJ", "ABC DEF GHI", {
        "MUC": rp(3 / 6, 3 / 6), "LEA": rp((7 * (1 + 1 + 1) / 21) / 7, (3 / 3 + 3 / 3 + 3 / 3) / 9)}),
    "TC-L-1": ("ABC DEFG", "AB CD FGH", {
        "MUC": rp(2 / 5, 2 / 4), "LEA": rp((3 * 1 / 3 + 4 * 1 / 6) / 7, (2 + 2 * 0 + 3 / 3) / 7)}),
    "TC-M-1": ("abcdef", "abcdef", {
        "MUC": ONE, "B3": ONE, "CEAFm": ONE, "CEAFe": ONE, "BLANC": ONE, "LEA": ONE}),
    "TC-M-2": ("abcdef", "a b c d e f", {"MUC": ZERO, "BLANC": ZERO, "LEA": ZERO}),
    "TC-M-3": ("abcdef", "ab cde f", {
        "BLANC": rp(4 / 15, 4 / 4), "LEA": rp(6 * (4 / 15) / 6, (2 + 3 + 0) / 6)}),
    "TC-M-4": ("abcdef", "abcxyz", {
        "BLANC": rp(3 / 15, 3 / 15), "LEA": rp(6 * (3 / 15) / 6, 6 * (3 / 15) / 6)}),
    "TC-M-5": ("abcdef", "a b c x y z", {"MUC": ZERO, "BLANC": ZERO, "LEA": ZERO}),
    "TC-M-6": ("abcdef", "ab cxy z", {
        "BLANC": rp(1 / 15, 1 / 4), "LEA": rp(6 * (1 / 15) / 6, (2 + 3 * 0 + 1 * 0) / 6)}),
    "TC-N-1": ("a b c d e f", "a b c d e f", {
        "MUC": ZERO, "B3": ONE, "CEAFm": ONE, "CEAFe": ONE, "BLANC": ONE, "LEA": ONE}),
    "TC-N-2": ("a b c d e f", "abcdef", {"MUC": ZERO, "BLANC": ZERO, "LEA": ZERO}),
    "TC-N-3": ("a b c d e f", "ab cde f", {
        "BLANC": rp(11 / 15, 11 / 11), "LEA": rp(1 / 6, 1 / 6)}),
    "TC-N-4": ("a b c d e f", "a b c x y z", {
        "MUC": ZERO, "BLANC": rp(3 / 15, 3 / 15), "LEA": rp(3 / 6, 3 / 6)}),
    "TC-N-5": ("a b c d e f", "abcxyz", {"BLANC": ZERO, "LEA": ZERO}),
    "TC-N-6": ("a b c d e f", "ab cxy z", {"BLANC": rp(2 / 15, 2 / 11), "LEA": ZERO}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_it_reproduces_the_reference_scorer_test_case(case):
    key, response, expected = CASES[case]
    got = score_clusters(clusters(key), clusters(response), align=False)
    for metric, (r, p, f) in expected.items():
        assert got[f"{metric}_R"] == pytest.approx(r, abs=1e-9), metric
        assert got[f"{metric}_P"] == pytest.approx(p, abs=1e-9), metric
        assert got[f"{metric}_F1"] == pytest.approx(f, abs=1e-9), metric


def test_it_gives_the_conll_average_of_muc_b3_and_ceafe():
    got = score_clusters(clusters(TC_A), clusters("a bcx dy z"), align=False)
    expected = (f1(1 / 3, 1 / 3) + f1(5 / 9, 17 / 42) + f1(2.2 / 3, 2.2 / 4)) / 3
    assert got["CoNLL_F1"] == pytest.approx(expected, abs=1e-12)
