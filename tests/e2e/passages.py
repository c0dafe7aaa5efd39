"""Long test passages: a coreference document longer than any the demo shows, and summaries.

`long_coref_conll()` returns a gold and a system CoNLL-2012 file of one document of about 230
tokens and eight chains, written from bracketed sentences (``[3 the Sorbonne]`` marks a mention
of chain 3; brackets nest). The system misses some mentions and merges two chains, so both sides
of the item page have something to show.
"""

from __future__ import annotations

GOLD = [
    "[0 Marie Sklodowska] was born in [1 Warsaw] in 1867 , the youngest child of [2 a family of "
    "teachers] .",
    "[0 She] left [1 the city] in 1891 and moved to [3 Paris] to study physics and mathematics "
    "at [4 the Sorbonne] , where [0 she] met [5 Pierre Curie] .",
    "[5 Pierre] was an instructor at [6 the School of Physics and Chemistry] , and [0 [5 his] "
    "future wife] shared [5 his] interest in magnetism .",
    "[0 Marie] and [5 Pierre] married in 1895 , and [8 [0 her] doctoral work] began soon after "
    "on the rays that uranium gives off .",
    "[8 This work] led [0 her] to coin the word radioactivity and to search for new elements "
    "in pitchblende .",
    "Working in a shed beside [6 the school] , [0 the young researcher] and [5 her husband] "
    "announced polonium , named after [0 her] native country , in 1898 .",
    "[5 Pierre] died in a street accident in [3 the capital] in 1906 , and [0 Marie] took over "
    "[5 his] chair at [4 the university] , the first woman to teach there .",
    "[0 She] received a second Nobel Prize in 1911 , this time in chemistry , and later founded "
    "an institute in [3 Paris] and another in [1 Warsaw] .",
    "During the war [0 she] drove mobile X-ray units to the front , with [2 [0 her] family] "
    "helping to raise funds at home .",
    "[0 Curie] died in 1934 ; [8 [0 her] research] on radioactivity changed physics , "
    "chemistry and medicine for good .",
]

# What a system might find: some pronouns missed, the husband's chain merged into hers in the
# sixth sentence, the school and the university confused.
SYSTEM = [
    "[0 Marie Sklodowska] was born in [1 Warsaw] in 1867 , the youngest child of a family of "
    "teachers .",
    "[0 She] left [1 the city] in 1891 and moved to [3 Paris] to study physics and mathematics "
    "at [4 the Sorbonne] , where she met [5 Pierre Curie] .",
    "[5 Pierre] was an instructor at [4 the School of Physics and Chemistry] , and [0 his "
    "future wife] shared [5 his] interest in magnetism .",
    "[0 Marie] and [5 Pierre] married in 1895 , and [8 [0 her] doctoral work] began soon after "
    "on the rays that uranium gives off .",
    "[8 This work] led [0 her] to coin the word radioactivity and to search for new elements "
    "in pitchblende .",
    "Working in a shed beside [4 the school] , [0 the young researcher] and [0 her husband] "
    "announced polonium , named after [0 her] native country , in 1898 .",
    "[5 Pierre] died in a street accident in [3 the capital] in 1906 , and [0 Marie] took over "
    "his chair at [4 the university] , the first woman to teach there .",
    "[0 She] received a second Nobel Prize in 1911 , this time in chemistry , and later founded "
    "an institute in [3 Paris] and another in [1 Warsaw] .",
    "During the war [0 she] drove mobile X-ray units to the front , with [0 her] family "
    "helping to raise funds at home .",
    "[0 Curie] died in 1934 ; [8 [0 her] research] on radioactivity changed physics , "
    "chemistry and medicine for good .",
]


def conll(sentences: list[str], name: str = "curie") -> str:
    """Return a CoNLL-2012 document of bracketed sentences (one mention column)."""
    lines = [f"#begin document ({name}); part 000"]
    for sentence in sentences:
        tokens: list[tuple[str, str]] = []
        opened: list[str] = []
        pending: list[str] = []
        for raw in sentence.split(" "):
            if raw.startswith("["):
                pending.append(raw[1:])
                continue
            word = raw
            closes = 0
            while word.endswith("]") and len(word) > 1:
                word = word[:-1]
                closes += 1
            marks = [f"({chain}" for chain in pending]
            opened += pending
            pending = []
            for _ in range(closes):
                chain = opened.pop()
                opening = f"({chain}"
                if marks and marks[-1] == opening:
                    marks[-1] = f"({chain})"
                else:
                    marks.append(f"{chain})")
            tokens.append((word, "|".join(marks) or "-"))
        assert not opened and not pending, sentence
        lines += [f"{name} 0 {n} {word} {mark}" for n, (word, mark) in enumerate(tokens)]
        lines.append("")
    lines[-1] = "#end document"
    return "\n".join(lines) + "\n"


def long_coref_conll() -> tuple[str, str]:
    """Return (gold, system) CoNLL-2012 files of the long document."""
    return conll(GOLD), conll(SYSTEM)


SUMMARIES = [
    "The city council approved a new cycling plan on Tuesday. It adds forty kilometres of "
    "protected lanes by 2027 and lowers the speed limit near schools. Shop owners worry about "
    "parking; the mayor promised a review after one year.",
    "A heatwave hit southern Europe for a second week. Spain recorded 44 °C in Seville, and "
    "Italy put sixteen cities on red alert. Officials urged people to stay indoors at midday "
    "and to check on elderly neighbours.",
    "Researchers trained a small model to summarise court rulings. It matched lawyers' summaries "
    "on coherence but often left out the final decision, which the authors call its main "
    "weakness.",
]


def summaries_csv() -> str:
    """Return an item file of three news summaries (display "text")."""
    rows = "".join(f's{n},"{text}"\n' for n, text in enumerate(SUMMARIES, start=1))
    return "id,text\n" + rows
