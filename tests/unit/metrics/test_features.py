"""Error-type features (Borovikova et al. 2022, §3.1), on the paper's appendix examples."""

from core.metrics.features import ERROR_FEATURES, error_features
from core.metrics.formats import Document, Mention


def doc(*entities):
    return Document(name="d", entities=tuple(tuple(sorted(e)) for e in entities))


def m(start, end):
    return Mention(0, start, end)


# "A phone is on the table. It rings. I pick it up": tokens A=0 phone=1 … It=6 … it=11
PHONE, IT1, IT2, TABLE = m(0, 2), m(6, 7), m(11, 12), m(4, 6)
GOLD_PHONE = doc({PHONE, IT1, IT2})


def features(gold, system, **nonzero):
    expected = dict.fromkeys(ERROR_FEATURES, 0)
    expected.update({f"feature:{k}": v for k, v in nonzero.items()})
    assert error_features(gold, system) == expected


def test_it_finds_no_error_in_a_perfect_annotation():
    features(GOLD_PHONE, GOLD_PHONE)


def test_it_counts_a_silence_error():
    features(GOLD_PHONE, doc({PHONE, IT1}), silence=1)


def test_it_counts_a_chain_absence():
    features(GOLD_PHONE, doc(), chain_absence=1)


def test_it_counts_a_border_error():
    # "Whales are marine mammals": the system marks "Whales are" for "Whales".
    whales, they = m(0, 1), m(5, 6)
    features(doc({whales, they}), doc({m(0, 2), they}), border=1)


def test_it_counts_a_type_error():
    # "John likes his brother because he is funny": "he" put in John's chain.
    john, his, brother, he = m(0, 1), m(2, 3), m(2, 4), m(5, 6)
    features(doc({john, his}, {brother, he}), doc({john, his, he}, {brother}), type=1)


def test_it_counts_a_noise_error():
    # "The dog barked at its owner. It's time to go.": expletive "It" added to the dog's chain.
    dog, its, expletive = m(0, 2), m(4, 5), m(7, 8)
    features(doc({dog, its}), doc({dog, its, expletive}), noise=1)


def test_it_counts_an_irrelevant_chain():
    # "A cat and a dog are playing together": the system links the cat and the dog.
    cat, dog = m(0, 2), m(3, 5)
    features(doc({cat}, {dog}), doc({cat, dog}), irrelevant_chains=1)


def test_it_matches_each_gold_mention_to_one_border_mention_at_most():
    features(doc({m(0, 3), m(8, 9)}), doc({m(0, 2), m(1, 3), m(8, 9)}), border=1, noise=1)
