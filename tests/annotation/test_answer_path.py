"""What the answer path keeps per process is never stale nor different: an open study's
questions (annotation.selectors) and the annotator pages' URLs (annotation.views)."""

import pytest

from annotation.selectors import participant_by_token, study_questions
from studies.models import Question, Study
from studies.services import participants_invite

pytestmark = pytest.mark.django_db


def test_an_open_studys_questions_are_read_once_then_given_to_each_request_afresh(
        make_study, alice, django_assert_num_queries):
    study = make_study(alice, slug="cache-open", preset="summeval-4x5")
    token = participants_invite(study=study, count=1)[0].token
    first = participant_by_token(token=token)
    with django_assert_num_queries(1):  # the link's row only
        second = participant_by_token(token=token)
    stored = list(Question.objects.filter(study=study).order_by("position"))
    for questions in (first.study.question_list, second.study.question_list):
        assert [(q.pk, q.key, q.values, q.labels, q.rubric) for q in questions] == \
            [(q.pk, q.key, q.values, q.labels, q.rubric) for q in stored]
    mine, theirs = first.study.question_list[0], second.study.question_list[0]
    assert mine is not theirs and mine == theirs  # instances of their own, the same rows
    assert mine.study is first.study and theirs.study is second.study  # no query, no mix-up
    assert not mine._state.adding and mine._state.db == "default"


def test_a_drafts_questions_are_read_every_time(make_study, alice, django_assert_num_queries):
    draft = make_study(alice, slug="cache-draft", open=False)
    assert draft.status == Study.Status.DRAFT
    study_questions(study=draft, alias="default")
    with django_assert_num_queries(1):
        questions = study_questions(study=draft, alias="default")
    assert [q.key for q in questions] == [q.key for q in draft.question_list]


def test_a_question_saved_or_deleted_in_this_process_is_read_again(make_study, alice):
    study = make_study(alice, slug="cache-saved", preset="summeval-4x5")
    token = participants_invite(study=study, count=1)[0].token
    assert participant_by_token(token=token).study.question_list[0].prompt != "Changed"
    question = Question.objects.filter(study=study).order_by("position").first()
    question.prompt = "Changed"
    question.save()
    assert participant_by_token(token=token).study.question_list[0].prompt == "Changed"
    Question.objects.filter(study=study, position=3).delete()
    assert len(participant_by_token(token=token).study.question_list) == 3


@pytest.mark.parametrize("token", ["AbC_d-9" * 6, "with space", "ünï", "a%2Fb", "TOKEN-PLACEHOLDER"])
@pytest.mark.parametrize("view", ["annotation:next", "annotation:done", "annotation:consent"])
def test_annotator_urls_are_what_reverse_gives(view, token):
    from django.urls import reverse, set_script_prefix

    from annotation.views import annotator_url

    try:
        for prefix in ("/", "/concord/"):
            set_script_prefix(prefix)
            for _ in range(2):  # reversed, then from the template
                assert annotator_url(view, token) == reverse(view, kwargs={"token": token})
    finally:
        set_script_prefix("/")


def test_the_message_storage_is_built_only_for_a_request_that_uses_it(rf):
    from django.contrib import messages
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.http import HttpResponse
    from django.utils.functional import empty

    from config.middleware import MessageMiddleware

    def through(request, view):
        SessionMiddleware(lambda r: HttpResponse()).process_request(request)
        middleware = MessageMiddleware(lambda r: HttpResponse())
        middleware.process_request(request)
        view(request)
        return middleware.process_response(request, HttpResponse())

    answer = rf.post("/a/token/answer/")
    response = through(answer, lambda request: None)
    assert answer._messages._wrapped is empty and "messages" not in response.cookies

    saved = rf.post("/studies/s1/settings/")
    response = through(saved, lambda request: messages.success(request, "Settings saved."))
    assert "messages" in response.cookies  # stored as Django's middleware stores it
    shown = rf.get("/studies/s1/", HTTP_COOKIE=f"messages={response.cookies['messages'].value}")
    seen = []
    through(shown, lambda request: seen.extend(str(m) for m in messages.get_messages(request)))
    assert seen == ["Settings saved."]
