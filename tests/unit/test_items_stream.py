"""`core.items.items_stream` checks an item file row by row, never holding its rows."""

from core.items import items_parse, items_stream

CSV = b"id,text,control\na,First,0\nb,Second,1\nc,Third\n"  # line 4: a field short
JSONL = (b'{"id": "a", "text": "First"}\n'
         b'{"id": "b", "text": "Second", "meta:source": "wiki", "control": 1}\n')


def stream(data, filename="items.csv", **kwargs):
    return items_stream(data, filename=filename, display="text", max_bytes=1 << 20, **kwargs)


def test_it_checks_each_row_as_it_is_read():
    items = stream(CSV)
    first = next(items.rows)
    assert (first.line, first.external_id) == (2, "a")
    assert not items.errors  # line 4 is not read yet
    assert [row.external_id for row in items.rows] == ["b"]
    assert [(p.line, p.message) for p in items.errors.problems] == [
        (4, "2 fields where the header has 3 (delimiter ',')")]


def test_it_leaves_the_check_across_rows_to_its_caller():
    seen = []
    rows = list(stream(b"id,text\na,One\na,Two\n", id_check=lambda i, line: seen.append(line)).rows)
    assert [row.external_id for row in rows] == ["a", "a"] and seen == [2, 3]


def test_it_reads_json_lines_as_items_parse_does():
    rows = list(stream(JSONL, "items.jsonl").rows)
    assert rows == items_parse(JSONL, filename="items.jsonl", display="text", existing_ids=set(),
                               max_bytes=1 << 20)
    assert rows[1].meta == {"source": "wiki"} and rows[1].is_control
