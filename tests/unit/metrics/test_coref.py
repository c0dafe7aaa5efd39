"""coref_metrics on documents: reading, scorch's CLI mention alignment, LEA conventions."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scorch import conll as scorch_conll

from core.metrics.coref import COREF_METRICS, coref_metrics, f1, lea, score_clusters
from core.metrics.formats import read_conll2012


def conll(rows):
    """Build the reference scorer's TC-A document (LuoTestCase) with the given coref column.

    Mentions of the key: a = s0 tokens 0-1, b = s0 3-6, c = s1 0, d = s1 2-3, e = s1 5, f = s1 7-9.
    """
    words = [["a1", "a2", "junk", "b1", "b2", "b3", "b4", "jnk", "."],
             ["c", "jnk", "d1", "d2", "jnk", "e", "jnk", "f1", "f2", "f3", "."]]
    lines = ["#begin document (LuoTestCase);"]
    for s, (sentence, corefs) in enumerate(zip(words, rows, strict=True)):
        if s:
            lines.append("")
        for i, (w, c) in enumerate(zip(sentence, corefs, strict=True)):
            lines.append(f"test{s + 1}\t0\t{i}\t{w}\t{c}")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


KEY = conll([
    ["(0", "0)", "-", "(1", "-", "-", "1)", "-", "-"],
    ["(1)", "-", "(2", "2)", "-", "(2)", "-", "(2", "-", "2)", "-"],
])
RESPONSES = {
    "TC-A-1": KEY,
    "TC-A-2": conll([  # {a} {de}
        ["(0", "0)", "-", "-", "-", "-", "-", "-", "-"],
        ["-", "-", "(2", "2)", "-", "(2)", "-", "-", "-", "-", "-"],
    ]),
    "TC-A-3": conll([  # {a} {bcx} {defy} {z}: x = s0 token 2, y = s1 token 6, z = s0 token 7
        ["(0", "0)", "(1)", "(1", "-", "-", "1)", "(3)", "-"],
        ["(1)", "-", "(2", "2)", "-", "(2)", "(2)", "(2", "-", "2)", "-"],
    ]),
    "TC-A-4": conll([  # {a} {bcx} {dy} {z}
        ["(0", "0)", "(1)", "(1", "-", "-", "1)", "(3)", "-"],
        ["(1)", "-", "(2", "2)", "-", "-", "(2)", "-", "-", "-", "-"],
    ]),
    "TC-A-7": conll([  # {a} {bcxB} {dy} {z}, B the same span as b in the same entity
        ["(0", "0)", "(1)", "(1|(1", "-", "-", "1)|1)", "(3)", "-"],
        ["(1)", "-", "(2", "2)", "-", "-", "(2)", "-", "-", "-", "-"],
    ]),
    "TC-A-8": conll([  # {a} {bcx} {dy} {Bz}, B the same span as b in another entity
        ["(0", "0)", "(1)", "(1|(3", "-", "-", "1)|3)", "(3)", "-"],
        ["(1)", "-", "(2", "2)", "-", "-", "(2)", "-", "-", "-", "-"],
    ]),
    "TC-A-10": conll([  # every mention a singleton
        ["(0", "0)", "-", "(1", "-", "-", "1)", "-", "-"],
        ["(2)", "-", "(3", "3)", "-", "(4)", "-", "(5", "-", "5)", "-"],
    ]),
    "TC-A-11": conll([  # one entity
        ["(0", "0)", "-", "(0", "-", "-", "0)", "-", "-"],
        ["(0)", "-", "(0", "0)", "-", "(0)", "-", "(0", "-", "0)", "-"],
    ]),
}


def doc(name):
    (d,) = read_conll2012(RESPONSES[name] if name != "key" else KEY, f"{name}.conll")
    return d


def rp(r, p):
    return (r, p, f1(r, p))


def blanc(rc, pc, rn, pn):
    return ((rc + rn) / 2, (pc + pn) / 2, (f1(rc, pc) + f1(rn, pn)) / 2)


def assert_metrics(got, expected):
    for metric, (r, p, f) in expected.items():
        assert got[f"{metric}_R"] == pytest.approx(r, abs=1e-9), metric
        assert got[f"{metric}_P"] == pytest.approx(p, abs=1e-9), metric
        assert got[f"{metric}_F1"] == pytest.approx(f, abs=1e-9), metric


def test_it_returns_exactly_the_contract_metric_names():
    assert list(coref_metrics(doc("key"), doc("TC-A-2"))) == list(COREF_METRICS)


def test_it_reads_the_same_entities_as_scorchs_conll_reader():
    for name in ("key", *RESPONSES):
        text = KEY if name == "key" else RESPONSES[name]
        ((_, theirs),) = scorch_conll.parse_file([line.strip() for line in text.splitlines()])
        theirs = {frozenset((b, int(s), int(e) + 1) for b, s, e in ms) for ms in theirs.values()}
        ours = {frozenset(e) for e in doc(name).entities}
        assert ours == theirs, name


def test_it_reproduces_the_reference_values_when_the_system_has_no_twinless_mention():
    # TC-A-2 (missing mentions), TC-A-10 (all singletons), TC-A-11 (one entity): alignment
    # adds nothing, so our per-item numbers are the reference scorer's.
    assert_metrics(coref_metrics(doc("key"), doc("TC-A-2")), {
        "MUC": rp(1 / 3, 1), "B3": rp(7 / 18, 1), "CEAFm": rp(1 / 2, 1), "CEAFe": rp(0.6, 0.9),
        "BLANC": blanc(1 / 4, 1, 2 / 11, 1), "LEA": rp(1 / 3, 1)})
    assert_metrics(coref_metrics(doc("key"), doc("TC-A-10")), {
        "MUC": (0, 0, 0), "B3": rp(1 / 2, 1), "BLANC": blanc(0, 0, 1, 11 / 15),
        "LEA": rp(1 / 6, 1 / 6)})
    assert_metrics(coref_metrics(doc("key"), doc("TC-A-11")), {
        "MUC": rp(1, 3 / 5), "B3": rp(1, 7 / 18), "BLANC": blanc(1, 4 / 15, 0, 0),
        "LEA": rp(5 / 6, 4 / 15)})


def test_it_gives_one_on_a_perfect_response():
    got = coref_metrics(doc("key"), doc("TC-A-1"))
    assert all(v == pytest.approx(1.0) for v in got.values())


def test_it_deduplicates_repeated_mentions_like_the_reference_scorer():
    # TC-A-7 and TC-A-8 de-duplicate to TC-A-4: {a} {bcx} {dy} {z}.
    assert doc("TC-A-7").entities == doc("TC-A-4").entities
    assert doc("TC-A-8").entities == doc("TC-A-4").entities
    key = [set(e) for e in doc("key").entities]
    got = score_clusters(key, [set(e) for e in doc("TC-A-8").entities], align=False)
    assert_metrics(got, {
        "MUC": rp(1 / 3, 1 / 3), "B3": rp(5 / 9, 17 / 42), "CEAFm": rp(4 / 6, 4 / 7),
        "CEAFe": rp(2.2 / 3, 2.2 / 4), "BLANC": blanc(1 / 4, 1 / 4, 5 / 11, 5 / 17),
        "LEA": rp(3 / 6, 2 / 7)})


def test_it_adds_twinless_system_mentions_to_the_gold_as_singletons():
    # TC-A-3 after scorch's alignment: key {a} {bc} {def} {x} {y} {z}, response
    # {a} {bcx} {defy} {z}; worked by hand.
    got = coref_metrics(doc("key"), doc("TC-A-3"))
    ceafe = 1 + 4 / 5 + 6 / 7 + 1  # a-a, bc-bcx, def-defy, z-z
    assert_metrics(got, {
        "MUC": rp(1, 3 / 5),  # singletons change nothing in MUC
        # B3 precision: a 1, bcx (4+1)/3, defy (9+1)/4, z 1 over 9 mentions
        "B3": rp(1, (1 + 5 / 3 + 10 / 4 + 1) / 9),
        "CEAFm": rp(7 / 9, 7 / 9),
        "CEAFe": rp(ceafe / 6, ceafe / 4),
        # links among 9 mentions: C_k 4, C_r 9 (C_k ⊂ C_r), N_k 32, N_r 27, both-non-coref 27
        "BLANC": blanc(4 / 4, 4 / 9, 27 / 32, 27 / 27),
        # recall: a, bc, def, z resolved; x, y not (x is in bcx, y in defy)
        # precision: a 1, bcx 3·(1/3), defy 4·(3/6), z 1
        "LEA": rp((1 + 2 + 3 + 1) / 9, (1 + 1 + 2 + 1) / 9)})


def test_it_reproduces_the_reference_values_without_alignment_on_the_same_documents():
    key = [set(e) for e in doc("key").entities]
    got = score_clusters(key, [set(e) for e in doc("TC-A-3").entities], align=False)
    assert_metrics(got, {"B3": rp(1, 55 / 108), "LEA": rp(1, 4 / 9)})


def test_it_counts_a_key_singleton_resolved_only_if_it_is_a_response_singleton():
    assert lea([{"a"}], [{"a"}]) == (1.0, 1.0, 1.0)
    assert lea([{"a"}], [{"a", "b"}])[0] == 0.0


def test_it_gives_zero_lea_for_an_empty_side():
    assert lea([], [{"a", "b"}]) == (0.0, 0.0, 0.0)
    assert lea([{"a", "b"}], []) == (0.0, 0.0, 0.0)


def test_it_keeps_every_metric_within_zero_and_one():
    for name in RESPONSES:
        got = coref_metrics(doc("key"), doc(name))
        assert all(0.0 <= v <= 1.0 for v in got.values()), name


def test_it_refuses_documents_of_different_formats():
    from dataclasses import replace

    with pytest.raises(ValueError, match="format"):
        coref_metrics(doc("key"), replace(doc("key"), format="rucoco-json"))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sets(st.integers(0, 12), min_size=1, max_size=5), max_size=4),
    st.lists(st.sets(st.integers(0, 12), min_size=1, max_size=5), max_size=4),
)
def test_it_keeps_every_metric_finite_and_within_zero_and_one(key, response):
    def partition(clusters):  # make the clusters disjoint, as a reader guarantees
        seen, out = set(), []
        for c in clusters:
            if c - seen:
                out.append(c - seen)
            seen |= c
        return out

    got = score_clusters(partition(key), partition(response))
    assert all(0.0 <= v <= 1.0 for v in got.values())


def test_it_keeps_scorchs_conventions_on_two_documents_without_mentions():
    got = score_clusters([], [])
    assert got["BLANC_F1"] == 1.0  # scorch: no link on either side counts as agreement
    assert all(v == 0.0 for k, v in got.items() if not k.startswith("BLANC"))


# Real files are not uniform: OntoNotes lines of 12+ columns beside short ones, parts without "|",
# stray tokens in the coreference column. The reference scorer and scorch read the last column
# of each token line and scan it for brackets; so do we (with warnings), and score the same.
MIXED_GOLD = """#begin document (mixed); part 000
mixed 0 0 Mary NNP (TOP(S(NP*) - - - - PERSON (0(3)
mixed 0 1 Smith NNP *) - - - - * 0)
mixed 0 2 said -
her (0)
sister -
mixed 0 5 left VBD (VP*) - - - - * (1)

mixed 1 0 She (0)|*
mixed 1 1 and -
her (1)
friend -
mixed 1 4 stayed (VP*) (2)|(A)
#end document
"""
MIXED_SYSTEM = """#begin document (mixed); part 000
mixed 0 0 Mary NNP (TOP(S(NP*) - - - - PERSON (0
mixed 0 1 Smith NNP *) - - - - * 0)
mixed 0 2 said -
her (1)
sister -
mixed 0 5 left VBD (VP*) - - - - * (1)

mixed 1 0 She (0)
mixed 1 1 and -
her (1)(4)
friend -
mixed 1 4 stayed (VP*) -
#end document
"""


def test_it_reads_mixed_files_as_scorch_does():
    from core.problems import Collector

    for text in (MIXED_GOLD, MIXED_SYSTEM):
        warnings = Collector("mixed.conll")
        (ours,) = read_conll2012(text, "mixed.conll", warnings)
        ((_, theirs),) = scorch_conll.parse_file(text.splitlines())
        theirs = {frozenset((b, int(s), int(e) + 1) for b, s, e in ms) for ms in theirs.values()}
        # scorch leaves an entity emptied by its de-duplication in place, as an empty list
        assert {frozenset(e) for e in ours.entities} == theirs - {frozenset()}
        assert warnings.count > 0  # the short lines at least


def test_it_scores_mixed_files_exactly_as_scorch_does():
    from scorch import scores

    (gold,) = read_conll2012(MIXED_GOLD, "gold.conll")
    (system,) = read_conll2012(MIXED_SYSTEM, "system.conll")
    got = coref_metrics(gold, system)
    # scorch's CLI: clusters of both files, twinless system mentions added to the gold.
    key = [set(e) for e in gold.entities]
    response = [set(e) for e in system.entities]
    known = set().union(*key)
    key += [{m} for e in response for m in e if m not in known]
    for name, metric in (("MUC", scores.muc), ("B3", scores.b_cubed), ("CEAFm", scores.ceaf_m),
                         ("CEAFe", scores.ceaf_e), ("BLANC", scores.blanc)):
        r, p, f = metric(key, response)
        assert (got[f"{name}_R"], got[f"{name}_P"], got[f"{name}_F1"]) == pytest.approx((r, p, f)), name
