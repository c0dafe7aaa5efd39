"""Reads for the questionnaire: the participant behind a link and the next presentation."""

from __future__ import annotations

from functools import cache

from django.db import connections, router
from django.http import Http404

from studies.models import Assignment, Participant, Scale, Study

# Every annotator request (each answer, each page) starts by resolving its link. The ORM spends
# most of that time compiling the three-table SELECT, so the statement is built once per database
# from the models' fields and the rows become model instances with the fields' own converters,
# exactly as `select_related("study", "study__scale")` would make them (docs/benchmarks.md).
_LINK_MODELS = ((Participant, "p"), (Study, "s"), (Scale, "sc"))


@cache
def _link_query(alias: str) -> tuple[str, list[tuple]]:
    connection = connections[alias]
    quote = connection.ops.quote_name
    columns: list[str] = []
    readers: list[tuple] = []
    for model, short in _LINK_MODELS:
        fields = model._meta.concrete_fields
        start = len(columns)
        converters = []
        for offset, field in enumerate(fields):
            col = field.get_col(model._meta.db_table)
            functions = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
            if functions:
                converters.append((start + offset, functions, col))
        columns += [f"{short}.{quote(field.column)}" for field in fields]
        readers.append((model, [field.attname for field in fields], start, len(columns), converters))
    tables = {model: quote(model._meta.db_table) for model, _ in _LINK_MODELS}
    # Identifiers come from the models; the token is a bound parameter.
    sql = (
        f"SELECT {', '.join(columns)} FROM {tables[Participant]} p "  # noqa: S608
        f"JOIN {tables[Study]} s ON s.id = p.study_id "
        f"LEFT JOIN {tables[Scale]} sc ON sc.study_id = s.id WHERE p.token = %s"
    )
    return sql, readers


def participant_by_token(*, token: str) -> Participant:
    """Return the participant of a link with its study and the study's scale (one query), or 404."""
    alias = router.db_for_read(Participant)
    connection = connections[alias]
    sql, readers = _link_query(alias)
    with connection.cursor() as cursor:
        cursor.execute(sql, [token])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such link")
    row = list(row)
    instances = []
    for model, names, start, stop, converters in readers:
        for index, functions, col in converters:
            value = row[index]
            for function in functions:
                value = function(value, col, connection)
            row[index] = value
        values = row[start:stop]
        instances.append(None if values[0] is None else model.from_db(alias, names, values))
    participant, study, scale = instances
    Participant.study.field.set_cached_value(participant, study)
    if scale is not None:
        Study.scale.related.set_cached_value(study, scale)
        Scale.study.field.set_cached_value(scale, study)
    return participant


def next_assignment(*, participant: Participant) -> Assignment | None:
    """Return the first presentation without a stored answer (resume point), or None."""
    return (
        Assignment.objects.filter(participant=participant, response__isnull=True)
        .select_related("item")
        .order_by("position")
        .first()
    )


def participant_pseudonyms(*, study_id: int) -> dict[int, str]:
    """Return {participant id: "A1", "A2", …} in the order of each participant's first response.

    "First" is the lowest response id: answers collected in the app are numbered as they are
    committed, and an import stores its rows in the order annotators first appear in the file.
    Participants without any response get no pseudonym. One query.
    """
    from django.db.models import Min

    from .models import Response

    firsts = (
        Response.objects.filter(participant__study_id=study_id)
        .values("participant_id")
        .annotate(first=Min("id"))
        .order_by("first")
        .values_list("participant_id", flat=True)
    )
    return {pid: f"A{n}" for n, pid in enumerate(firsts, start=1)}
