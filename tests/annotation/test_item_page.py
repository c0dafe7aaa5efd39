"""The item page: every question under one Confirm, going back, a locked answer, the duration
estimate, the favicon, and the demo's numbered coreference chains."""

import html
import re
import uuid

import pytest

from annotation.models import Answer, Response
from studies.models import Assignment, Study
from studies.services import participants_invite
from tests.answers import submit
from tests.e2e.passages import summaries_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def summeval(make_study, alice):
    study = make_study(alice, slug="summeval", preset="summeval-4x5", items=summaries_csv())
    return participants_invite(study=study, count=1)[0]


def start(client, participant):
    client.post(f"/a/{participant.token}/")
    return client.get(f"/a/{participant.token}/next/")


def test_it_shows_every_question_with_its_own_fields(client, summeval):
    page = start(client, summeval).content.decode()
    for key in ("coherence", "consistency", "fluency", "relevance"):
        assert f'name="value:{key}" value="5"' in page
        assert f'name="cant_judge:{key}"' in page and f'name="comment:{key}"' in page
        assert f'id="guide-{key}"' in page and f'href="#guide-{key}"' in page
    assert page.count('id="submit"') == 1 and page.count("<fieldset") == 4
    # The rating guide is shown once, above the item, not once per question.
    assert page.count('id="rubric"') == 1
    assert page.count("The collective quality of all sentences") == 1


def test_a_one_question_study_keeps_the_value_field(client, participant):
    page = start(client, participant).content.decode()
    assert 'name="value" value="7"' in page and "value:" not in page
    assert 'aria-keyshortcuts="7"' in page


def test_a_form_post_without_script_answers_every_question(client, summeval):
    start(client, summeval)
    reply = client.post(f"/a/{summeval.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()),
        "value:coherence": "4", "value:consistency": "5", "cant_judge:fluency": "on",
        "value:relevance": "2", "comment:relevance": "Repeats itself.",
    })
    assert reply.status_code == 302 and reply["Location"].endswith("/next/")
    answers = {a.question.key: (a.value, a.missing, a.comment) for a in Answer.objects.all()}
    assert answers == {"coherence": (4, "", ""), "consistency": (5, "", ""),
                       "fluency": (None, "cant_judge", ""),
                       "relevance": (2, "", "Repeats itself.")}


def test_it_links_the_previous_item_from_the_second_one(client, participant):
    start(client, participant)
    assert "Previous item" not in client.get(f"/a/{participant.token}/next/").content.decode()
    submit(participant, 0, 3)
    page = client.get(f"/a/{participant.token}/next/").content.decode()
    assert f'href="/a/{participant.token}/item/0/"' in page


def test_going_back_shows_the_current_answers(client, summeval):
    start(client, summeval)
    client.post(f"/a/{summeval.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "value:coherence": "4",
        "value:consistency": "5", "cant_judge:fluency": "on", "value:relevance": "2",
        "comment:relevance": "Repeats itself."})
    page = client.get(f"/a/{summeval.token}/item/0/").content.decode()
    assert 'name="value:coherence" value="4" checked' in page
    assert 'name="value:relevance" value="2" checked' in page
    assert 'name="cant_judge:fluency" checked' in page
    assert "Repeats itself.</textarea>" in page and 'data-revisit="1"' in page
    assert "Item 1 of 3" in page and "locked-note" not in page


def test_a_first_showing_whose_repeat_was_shown_is_read_only(client, make_study, alice):
    study = make_study(alice, slug="dup", duplicates=1, duplicate_min_gap=2)
    participant = participants_invite(study=study, count=1)[0]
    start(client, participant)
    repeat = Assignment.objects.get(participant=participant, presentation=2)
    first = Assignment.objects.get(participant=participant, item=repeat.item, presentation=1)
    for position in range(repeat.position):
        submit(participant, position, 2)
    client.get(f"/a/{participant.token}/next/")  # shows the repeat
    page = client.get(f"/a/{participant.token}/item/{first.position}/").content.decode()
    assert "This answer can no longer be changed." in page
    assert page.count(" disabled") == 1 and 'id="submit"' not in page
    assert 'value="2" checked' in page and 'data-locked="1"' in page
    # Neutral: nothing on the page says why.
    assert "repeat" not in page.lower() and "duplicate" not in page.lower()


def test_the_instructions_estimate_the_duration_from_the_display_default(client, summeval):
    client.post(f"/a/{summeval.token}/")
    page = client.get(f"/a/{summeval.token}/instructions/").content.decode()
    # 3 items × 4 questions × 20 s (text) = 4 minutes
    assert "This takes about 4 minutes." in page


def test_the_instructions_estimate_the_duration_from_the_answers_so_far(
        client, make_study, alice):
    study = make_study(alice, slug="timed", annotators_per_item=30)
    others = participants_invite(study=study, count=5)
    for other in others:
        for position in range(4):
            submit(other, position, 3, active_ms=90_000)
    participant = participants_invite(study=study, count=1)[0]
    client.post(f"/a/{participant.token}/")
    page = client.get(f"/a/{participant.token}/instructions/").content.decode()
    # 20 answers with a median of 90 s: 5 items take about 8 minutes (not 5 × 45 s)
    assert Response.objects.count() == 20
    assert "This takes about 8 minutes." in page


def _nineteen_items_two_questions(alice, *, screening: bool):
    from studies.services import items_import, study_create, study_open

    questions = [{"key": "fluency", "prompt": "Fluent?", "scale": "likert-1-5", "required": True},
                 {"key": "fit", "prompt": "Fits?", "scale": "likert-1-5", "required": True}]
    study = study_create(owner=alice, slug="nineteen", title="Nineteen", questions=questions,
                         display="text")
    rows = "id,text,role,gold:fluency,tolerance:fluency\n"
    if screening:
        rows += "s1,Screen,screening,3,1\n"
    rows += "".join(f"m{i},Main {i},main,,\n" for i in range(19))
    items_import(study=study, data=rows.encode(), filename="items.csv")
    study_open(study=study)
    study.refresh_from_db()
    return study


def _join_and_read_the_estimate(client, study) -> str:
    consent = client.get(f"/join/{study.open_token}/").content.decode()
    entry = re.search(r'name="entry" value="([^"]+)"', consent).group(1)
    page = client.post(f"/join/{study.open_token}/", {"entry": entry}, follow=True)
    return re.search(r"This takes about [^<]*", page.content.decode()).group(0)


@pytest.mark.parametrize("screening", [False, True], ids=["main-only", "screening-first"])
def test_it_estimates_every_item_and_question_of_an_open_link_study(client, alice, screening):
    study = _nineteen_items_two_questions(alice, screening=screening)
    # 19 main items (+ 1 screening item) × 2 questions × 20 s: 13 (14) minutes, not the
    # screening item's 1 minute while only the screening is assigned.
    expected = "14 minutes." if screening else "13 minutes."
    assert _join_and_read_the_estimate(client, study) == f"This takes about {expected}"


def test_it_estimates_from_main_answers_only_not_quick_screening_ones(client, alice):
    study = _nineteen_items_two_questions(alice, screening=True)
    screen = study.items.get(role="screening")
    main = study.items.filter(role="main").order_by("position")[0]
    others = participants_invite(study=study, count=25)
    for other in others:  # 25 quick screening answers (2 s), 25 main ones (60 s)
        Response.objects.create(participant=other, item=screen, revision=1, active_ms=2_000)
        Response.objects.create(participant=other, item=main, revision=1, active_ms=60_000)
    # 20 items (1 screening + 19 main) × 60 s: 20 minutes, not a median over every answer.
    assert _join_and_read_the_estimate(client, study) == "This takes about 20 minutes."


def test_every_page_links_the_favicon_and_favicon_ico_is_found(client, participant):
    assert b'rel="icon"' in client.get(f"/a/{participant.token}/").content
    assert b'rel="icon"' in client.get("/accounts/login/").content
    reply = client.get("/favicon.ico")
    assert reply.status_code == 302 and "/static/favicon" in reply["Location"]


def test_the_demo_shows_numbered_coloured_coreference_chains(client):
    from demo.services import demo_seed

    demo_seed()
    study = Study.objects.get(slug="demo-coref")
    item = study.items.get(external_id="doc001")
    assert item.annotation["format"] == "rucoco-json" and "[" not in item.text
    participant = participants_invite(study=study, count=1)[0]
    page = start(client, participant).content.decode()
    assert 'class="chain-no">1</sub>' in page and 'class="mention chain-2"' in page
    assert "Gold annotation" in page and "System annotation" in page


def test_the_item_page_speaks_french(client, alice):
    from studies.services import items_import, study_create, study_open

    study = study_create(owner=alice, slug="fr4", title="Résumés", preset="summeval-4x5",
                         language="fr")
    items_import(study=study, data=summaries_csv().encode(), filename="i.csv")
    study_open(study=study)
    participant = participants_invite(study=study, count=1)[0]
    client.post(f"/a/{participant.token}/")
    instructions = client.get(f"/a/{participant.token}/instructions/").content.decode()
    assert "Cela prend environ 4 minutes." in instructions
    page = html.unescape(client.get(f"/a/{participant.token}/next/").content.decode())
    for text in ("Je ne peux pas en juger", "Ajouter un commentaire", "Guide d'évaluation",
                 "Valider", "Modifié."):
        assert text in page


def _post_json(client, participant, body: str):
    return client.post(f"/a/{participant.token}/answer/", body, content_type="application/json")


def test_comments_and_events_are_stored_exactly_and_bad_text_is_a_clear_400(client, summeval):
    """The answer's text travels to the database as JSON on PostgreSQL: quotes, backslashes,
    accents and emoji come back as sent; text no database can hold is a 400, never a 500."""
    start(client, summeval)
    comment = 'Il a dit "non" \\ puis 🙂 — fin'
    reply = client.post(f"/a/{summeval.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "value:coherence": "1",
        "value:consistency": "5", "value:fluency": "3", "value:relevance": "2",
        "comment:relevance": comment, "events": '[["shown", 0], ["answer", 1500]]'})
    assert reply.status_code == 302
    stored = Answer.objects.get(question__key="relevance")
    assert (stored.value, stored.comment) == (2.0, comment)
    assert Response.objects.get().events == [["shown", 0], ["answer", 1500]]
    answers = ('"answers": {"coherence": {"value": 4}, "consistency": {"value": 4}, '
               '"fluency": {"value": 4}, "relevance": {"value": 4, "comment": COMMENT}}')
    for bad_comment, events in (('"x\\ud800y"', "[]"), ('"ok"', '[["sh\\u0000wn", 0]]'),
                                ('"ok"', '[["\\udfff", 0]]')):
        body = (f'{{"position": 1, "client_id": "{uuid.uuid4()}", '
                f'{answers.replace("COMMENT", bad_comment)}, "events": {events}}}')
        reply = _post_json(client, summeval, body)
        assert reply.status_code == 400, body
        assert reply.json()["stored"] is False
    assert Response.objects.count() == 1


def _one_question_study(alice, *, prompt: str, rubric: str, labels: dict):
    from studies.services import items_import, study_create, study_open

    question = {"key": "q", "prompt": prompt, "rubric": rubric, "required": True,
                "scale": {"values": [int(v) for v in labels], "labels": labels}}
    study = study_create(owner=alice, slug="one", title="One", questions=[question],
                         display="text")
    items_import(study=study, data=b"id,text\ni1,A passage\ni2,Another\n", filename="items.csv")
    study_open(study=study)
    return participants_invite(study=study, count=1)[0]


def test_it_never_breaks_a_scale_label_inside_a_word(client, alice):
    participant = _one_question_study(alice, prompt="Fluent?", rubric="", labels={
        "1": "Incomprehensible", "2": "Awkward", "3": "Acceptable", "4": "Good", "5": "Flawless"})
    page = start(client, participant).content.decode()
    # A 16-letter word does not fit a fifth of the panel: the ends are spelt out under the row.
    assert 'class="question ends"' in page
    assert "1: Incomprehensible" in page and "5: Flawless" in page


def test_short_scale_labels_still_stand_under_their_numbers(client, alice):
    participant = _one_question_study(alice, prompt="Fluent?", rubric="", labels={
        "1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "very good"})
    page = start(client, participant).content.decode()
    assert 'class="question"' in page and "scale-ends" not in page


def test_the_rating_guide_does_not_repeat_the_prompt(client, alice):
    participant = _one_question_study(
        alice, prompt="How fluent is the text?",
        rubric="How fluent is the text? Judge grammar and readability.",
        labels={"1": "bad", "2": "good"})
    page = start(client, participant).content.decode()
    guide = page[page.index('id="rubric"'):page.index("</details>", page.index('id="rubric"'))]
    assert "Judge grammar and readability." in guide
    assert "How fluent is the text?" not in guide
    instructions = client.get(f"/a/{participant.token}/instructions/").content.decode()
    assert instructions.count("How fluent is the text?") == 1  # the rubric's heading only
    assert "Judge grammar and readability." in instructions


def test_the_rating_guide_is_open_on_the_first_item_only(client, participant):
    first = start(client, participant).content.decode()
    assert '<details class="rubric-panel" id="rubric" open>' in first
    submit(participant, 0, 3)
    later = client.get(f"/a/{participant.token}/next/").content.decode()
    assert '<details class="rubric-panel" id="rubric">' in later
    back = client.get(f"/a/{participant.token}/item/0/").content.decode()
    assert '<details class="rubric-panel" id="rubric">' in back


def test_the_instructions_keyboard_hint_is_marked_to_hide_on_a_phone_in_french_too(client, alice):
    from studies.services import items_import, study_create, study_open

    study = study_create(owner=alice, slug="fr", title="FR", preset="summeval-4x5", language="fr")
    items_import(study=study, data=summaries_csv().encode(), filename="items.csv")
    study_open(study=study)
    participant = participants_invite(study=study, count=1)[0]
    client.post(f"/a/{participant.token}/")
    page = client.get(f"/a/{participant.token}/instructions/").content.decode()
    assert ("Chaque élément pose plusieurs questions, sur un seul écran, validées ensemble. "
            '<span class="shortcuts-hint">Clavier : une touche numérique') in page
    assert "</span> Vous pouvez revenir à un élément précédent" in page
