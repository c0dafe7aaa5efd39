"""Pair items: similarity metrics and sentiment on import; random control pairs on request."""

import pytest
from django.core.management import CommandError, call_command

from core.metrics.sentiment import SentimentScorer
from core.metrics.similarity import SIMILARITY_METRICS, similarity_metrics_many
from core.problems import InputError
from studies.models import Item
from studies.services import controls_generate, items_import

pytestmark = pytest.mark.django_db

PAIRS = [
    ("p1", "The cat sat on the mat.", "A cat was sitting on the mat."),
    ("p2", "I love this film.", "I hate this film."),
    ("p3", "The weather is nice today.", "It is sunny and warm today."),
    ("p4", "I love this film.", "This film is wonderful."),
    ("p5", "He left early.", "He went home before the end."),
]


def pairs_csv(pairs=PAIRS, extra_header="", extra=()):
    lines = ["id,text_a,text_b" + extra_header]
    for n, (item_id, a, b) in enumerate(pairs):
        lines.append(f'{item_id},"{a}","{b}"' + (extra[n] if extra else ""))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def pair_study(make_study, alice):
    return make_study(alice, slug="sim", preset="similarity-1-5", items=None, open=False)


class CountingAnalyser:
    """VADER stand-in that counts the sentences it is asked to score."""

    def __init__(self):
        self.calls = []

    def polarity_scores(self, text):
        self.calls.append(text)
        return {"compound": len(text) / 100}


def test_it_stores_the_seven_similarity_metrics_of_each_pair(pair_study):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    expected = similarity_metrics_many([(a, b) for _, a, b in PAIRS])
    items = list(pair_study.items.order_by("position"))
    for item, metrics in zip(items, expected, strict=True):
        assert set(item.metrics) == set(SIMILARITY_METRICS)
        assert item.metrics == pytest.approx(metrics, abs=1e-12)


def test_it_stores_vader_sentiment_of_each_sentence(pair_study):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    item = pair_study.items.get(external_id="p2")
    vader = SentimentScorer()
    assert item.meta["sentiment_a"] == pytest.approx(vader.score("I love this film."))
    assert item.meta["sentiment_b"] == pytest.approx(vader.score("I hate this film."))
    assert item.meta["sentiment_a"] > 0 > item.meta["sentiment_b"]
    assert item.meta["sentiment_source"] == "vader"


def test_it_scores_each_distinct_sentence_once(pair_study, monkeypatch):
    analyser = CountingAnalyser()
    monkeypatch.setattr("core.metrics.sentiment.SentimentScorer._get_analyser",
                        lambda self: analyser)
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    distinct = {s for _, a, b in PAIRS for s in (a, b)}
    assert len(distinct) == 9  # "I love this film." appears twice
    assert sorted(analyser.calls) == sorted(distinct)


def test_imported_metric_columns_win(pair_study):
    data = pairs_csv(extra_header=",metric:bleu,metric:human_ref",
                     extra=[",0.123,1"] * len(PAIRS))
    items_import(study=pair_study, data=data, filename="pairs.csv")
    item = pair_study.items.get(external_id="p1")
    computed = similarity_metrics_many([(PAIRS[0][1], PAIRS[0][2])])[0]
    assert item.metrics["bleu"] == 0.123
    assert item.metrics["human_ref"] == 1
    assert item.metrics["chrf"] == pytest.approx(computed["chrf"])


def test_imported_sentiment_columns_win(pair_study, monkeypatch):
    analyser = CountingAnalyser()
    monkeypatch.setattr("core.metrics.sentiment.SentimentScorer._get_analyser",
                        lambda self: analyser)
    data = pairs_csv(extra_header=",meta:sentiment_a,meta:sentiment_b",
                     extra=[",0.9,-0.95"] + [",,"] * (len(PAIRS) - 1))
    items_import(study=pair_study, data=data, filename="pairs.csv")
    first = pair_study.items.get(external_id="p1")
    assert (first.meta["sentiment_a"], first.meta["sentiment_b"]) == ("0.9", "-0.95")
    assert first.meta["sentiment_source"] == "imported"
    assert PAIRS[0][1] not in analyser.calls
    assert pair_study.items.get(external_id="p2").meta["sentiment_source"] == "vader"


def test_it_reports_half_imported_or_non_numeric_sentiment(pair_study):
    data = pairs_csv(extra_header=",meta:sentiment_a,meta:sentiment_b",
                     extra=[",0.9,", ",high,0.1"] + [",,"] * (len(PAIRS) - 2))
    with pytest.raises(InputError) as exc:
        items_import(study=pair_study, data=data, filename="pairs.csv")
    assert [str(p) for p in exc.value.problems] == [
        "pairs.csv:2: column meta:sentiment_b: meta:sentiment_a is given, so meta:sentiment_b "
        "is needed too",
        "pairs.csv:3: column meta:sentiment_a: 'high' is not a number",
    ]
    assert Item.objects.count() == 0


def test_text_studies_get_no_similarity_metrics(make_study, alice):
    study = make_study(alice, open=False)
    assert study.items.get(external_id="i1").metrics == {"bleu": 0.5}


def test_control_generation_is_seeded_and_never_pairs_a_sentence_with_its_partner(
        make_study, alice, bob):
    studies = []
    for owner, slug in ((alice, "sim-a"), (bob, "sim-b")):
        study = make_study(owner, slug=slug, preset="similarity-1-5", items=None, open=False)
        items_import(study=study, data=pairs_csv(), filename="pairs.csv")
        assert controls_generate(study=study, n=6, seed=42) == 6
        studies.append(study)
    draws = [list(s.items.filter(is_control=True).order_by("position")
                  .values_list("external_id", "text_a", "text_b")) for s in studies]
    assert draws[0] == draws[1]
    assert [i for i, _, _ in draws[0]] == [f"control-{n:03d}" for n in range(1, 7)]
    partners = {frozenset((a, b)) for _, a, b in PAIRS}
    for _, a, b in draws[0]:
        assert a != b and frozenset((a, b)) not in partners
    assert len({(a, b) for _, a, b in draws[0]}) == 6


def test_controls_get_metrics_and_their_sources(pair_study):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    controls_generate(study=pair_study, n=2, seed=1)
    control = pair_study.items.get(external_id="control-001")
    assert control.is_control
    assert control.metrics == pytest.approx(
        similarity_metrics_many([(control.text_a, control.text_b)])[0])
    texts = {i: (a, b) for i, a, b in PAIRS}
    assert texts[control.meta["control_of_a"]][0] == control.text_a
    assert texts[control.meta["control_of_b"]][1] == control.text_b
    assert control.meta["sentiment_source"] == "vader"


def test_a_second_generation_continues_the_numbering_without_repeating(pair_study):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    controls_generate(study=pair_study, n=3, seed=1)
    controls_generate(study=pair_study, n=3, seed=1)
    controls = list(pair_study.items.filter(is_control=True).values_list("external_id", "text_a", "text_b"))
    assert sorted(i for i, _, _ in controls) == [f"control-{n:03d}" for n in range(1, 7)]
    assert len({(a, b) for _, a, b in controls}) == 6


def test_it_builds_controls_from_main_items_only(pair_study):
    key = pair_study.primary_question.key
    rows = [f'{i},"{a}","{b}",main,' for i, a, b in PAIRS[:3]] + [
        's1,"Screen sentence one.","Screen sentence two.",screening,3',
        's2,"Screen sentence three.","Screen sentence four.",screening,1',
        'c1,"Check sentence one.","Check sentence two.",check,5']
    data = f"id,text_a,text_b,role,gold:{key}\n" + "\n".join(rows) + "\n"
    items_import(study=pair_study, data=data.encode(), filename="pairs.csv")
    # Three main pairs allow 3 × 3 − 3 = 6 controls; the screening and check sentences none.
    assert controls_generate(study=pair_study, n=6, seed=3) == 6
    main_a = {a for _, a, _ in PAIRS[:3]}
    main_b = {b for _, _, b in PAIRS[:3]}
    for control in pair_study.items.filter(is_control=True):
        assert control.text_a in main_a and control.text_b in main_b
        assert control.meta["control_of_a"].startswith("p")
        assert control.meta["control_of_b"].startswith("p")
    # Every combination of the main sentences is used now (the 3 pairs and their 6 controls).
    with pytest.raises(InputError, match="only 0 combinations .* among 9 pairs"):
        controls_generate(study=pair_study, n=1, seed=3)


def test_it_refuses_more_controls_than_unrelated_combinations(pair_study):
    items_import(study=pair_study, data=pairs_csv(PAIRS[:2]), filename="pairs.csv")
    with pytest.raises(InputError, match="only 2 combinations"):
        controls_generate(study=pair_study, n=3, seed=1)
    assert pair_study.items.filter(is_control=True).count() == 0


def test_it_refuses_controls_outside_a_draft_pair_study(make_study, alice):
    study = make_study(alice, open=False)
    with pytest.raises(InputError, match="sentence-pair study in draft"):
        controls_generate(study=study, n=1, seed=1)


def test_the_command_generates_controls(pair_study, capsys):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    call_command("generate_controls", "sim", "4", "--seed", "7")
    assert "Added 4 control pairs" in capsys.readouterr().out
    with pytest.raises(CommandError, match="between 1 and 1000"):
        call_command("generate_controls", "sim", "0")


def test_the_study_page_adds_controls_and_redirects(pair_study, alice_client):
    items_import(study=pair_study, data=pairs_csv(), filename="pairs.csv")
    assert 'id="controls-form"' in alice_client.get("/studies/sim/").content.decode()
    response = alice_client.post("/studies/sim/controls/", {"n": 3, "seed": 5})
    assert response.status_code == 302 and response["Location"] == "/studies/sim/"
    assert pair_study.items.filter(is_control=True).count() == 3
    response = alice_client.post("/studies/sim/controls/", {"n": 500}, follow=True)
    assert "only 12 combinations" in response.content.decode()  # 4 × 5 − 5 pairs − 3 controls
    assert pair_study.items.filter(is_control=True).count() == 3
