"""Time the import of coreference items from CoNLL-2012 files (issue 23, point 17).

Run from the repository root: ``python -m bench.coref_import [--docs 5000 1000] [--keep]``.
Uses the configured database: ``DATABASE_URL`` (PostgreSQL) if set, else SQLite under
``CONCORD_VAR_DIR`` — and when neither is set, a fresh SQLite database in a temporary folder.

For each size it writes a gold and a system file of that many documents (each two sentences of
12 tokens with three entities; the system merges two of them and misses a mention), then times
the phases of ``studies.services.coref_items_import`` on a draft study: reading both files
(``core.metrics.formats.read_gold_and_system``), and the whole import (reading, the metrics and
error features of every document, the inserts). It also prints the file sizes and whether the
browser upload goes to the background import job (more documents than
``CONCORD_COREF_SYNC_MAX_DOCUMENTS``, or a file larger than ``CONCORD_IMPORT_SYNC_MAX_BYTES``). Prints human-readable lines and, LAST, one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

if not os.environ.get("DATABASE_URL") and not os.environ.get("CONCORD_VAR_DIR"):
    os.environ["CONCORD_VAR_DIR"] = tempfile.mkdtemp(prefix="concord-bench-coref-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from core.metrics.formats import read_gold_and_system  # noqa: E402
from studies.services import coref_items_import, study_create  # noqa: E402

WORDS = ("Marie", "met", "her", "brother", "in", "the", "old", "town", "and", "he", "smiled", ".")


def conll(n_docs: int, *, system: bool) -> bytes:
    """n_docs documents of two 12-token sentences; entities: Marie/her, brother/he, town."""
    lines = []
    for d in range(n_docs):
        name = f"doc{d}"
        lines.append(f"#begin document ({name}); part 000")
        for sentence in range(2):
            for t, word in enumerate(WORDS):
                tag = "-"
                if t == 0:
                    tag = "(0)"
                elif t == 2:
                    tag = "(0)" if system else "(0)|(1"
                elif t == 3:
                    tag = "(0)" if system else "1)"
                elif t == 7 and not (system and sentence):
                    tag = "(2)"
                elif t == 9:
                    tag = "(1)"
                lines.append(f"{name} 0 {t} {word} {tag}")
            lines.append("")
        lines.append("#end document")
    return ("\n".join(lines) + "\n").encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[5000, 1000])
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    call_command("migrate", verbosity=0)
    owner, _ = get_user_model().objects.get_or_create(username="bench-coref")
    print(f"database: {settings.DATABASES['default']['ENGINE']}")
    rows = []
    for n in args.docs:
        gold, system = conll(n, system=False), conll(n, system=True)
        start = time.perf_counter()
        read_gold_and_system(gold.decode(), system.decode(), format="conll2012",
                             gold_file="gold.conll", system_file="sys.conll")
        read_s = time.perf_counter() - start
        study = study_create(owner=owner, slug=f"bench-coref-{n}-{int(time.time())}",
                             title="bench", preset="likert-0-7-coref")
        start = time.perf_counter()
        count = coref_items_import(study=study, gold=gold, system=system,
                                   gold_name="gold.conll", system_name="sys.conll",
                                   fmt="conll2012")
        total_s = time.perf_counter() - start
        background = (max(len(gold), len(system)) > settings.CONCORD_IMPORT_SYNC_MAX_BYTES
                      or n > settings.CONCORD_COREF_SYNC_MAX_DOCUMENTS)
        rows.append({"documents": n, "items": count, "gold_bytes": len(gold),
                     "system_bytes": len(system), "read_s": round(read_s, 3),
                     "import_s": round(total_s, 3), "background": background})
        print(f"  {n:6d} documents ({len(gold) / 1e6:.1f} MB gold): read {read_s:6.2f} s, "
              f"whole import {total_s:6.2f} s; the page "
              f"{'hands it to the background job' if background else 'imports it at once'}")
        if not args.keep:
            study.delete()
    print(json.dumps({"results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
