"""Parse and validate response files collected elsewhere (Google Forms, Qualtrics, crowd platforms).

Contract (`import_responses`; user guide in docs/importing-responses.md):

- wide: one row per annotator (`annotator_column`), one column per item. A column whose header
  is an item id, or is mapped to one by the item map (CSV `column,item`), is an item; the k-th
  column of the same item is that annotator's presentation k (2 = the duplicate). A study of
  several questions names a column `item:question` (split on the last colon; question keys are
  slugs), the k-th column of the same item and question being presentation k; the item map
  may name the question too (target `item:question`). Columns named in `meta_columns` become
  participant metadata, those in `ignore_columns` are read by nothing; any other column is an
  error. `core.responses.columns` guesses and checks an on-screen mapping of the columns. Rows of
  the same annotator merge, the last non-blank answer winning.
- long: `annotator,item,value[,question,missing,comment,duration_ms,position]`, one row per
  answer to one question (`question` may be left out when the study asks one question); the
  rows of one annotator, item and position are one presentation; a second presentation of the
  same item is the repeated one when its position differs, an error otherwise. `missing` says
  why a value is empty (`cant_judge` or `skipped`). The responses export's own columns
  (`active_ms` for `duration_ms`; `presentation`, `duplicate`, `submitted_at`, `source`,
  `control`, `revision`, `role`, derived or recorded by the import itself or the items, are
  ignored) read back.
- The value map (CSV `label,value`) turns option labels into scale values. A presentation
  without any value, reason or comment is a missing answer: no row is stored, but it is counted.

`responses_parse` validates a file completely and reports every problem at once (file, line,
column) in one `InputError`; `responses_summarize` counts what a parsed file holds. Files are
read by `core.tabular` (delimiter detection, encodings, limits). Storing is
`annotation.services.responses_import`'s job, in one transaction.

The package: `model` holds what a file reads into and the reading both formats share, `parse`
validates a whole file (and reads the wide format), `long` reads the long format, whole or row
by row, `comparisons` reads the third format, `judgments`: a comparative question's judgments,
`annotator,items,choice[,question,comment]`.
"""

from core.responses.long import (
    LongColumns,
    LongReader,
    LongRow,
    LongStream,
    long_columns,
    long_row,
    long_unread,
    responses_stream_long,
)
from core.responses.model import (
    FORMATS,
    INVALID,
    LONG_ALIASES,
    LONG_COLUMNS,
    LONG_IGNORED,
    LONG_REQUIRED,
    MAX_ACTIVE_MS,
    MAX_ID_LENGTH,
    MISSING,
    SINGLE,
    Annotator,
    AnnotatorSummary,
    Answer,
    Cell,
    ImportSummary,
    Upload,
)
from core.responses.parse import later_presentations, responses_parse, responses_summarize

__all__ = [
    "FORMATS", "INVALID", "LONG_ALIASES", "LONG_COLUMNS", "LONG_IGNORED", "LONG_REQUIRED",
    "MAX_ACTIVE_MS", "MAX_ID_LENGTH", "MISSING", "SINGLE", "Annotator", "AnnotatorSummary",
    "Answer", "Cell", "ImportSummary", "LongColumns", "LongReader", "LongRow", "LongStream",
    "Upload", "later_presentations", "long_columns", "long_row", "long_unread",
    "responses_parse", "responses_stream_long", "responses_summarize",
]
