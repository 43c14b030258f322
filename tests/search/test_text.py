"""The pure part of search: what a query means, what a document holds, snippet markers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from registry.domain.search import (
    MARK_END,
    MARK_START,
    MAX_INDEXED_BODY,
    MAX_TERMS,
    STOP_WORDS,
    Term,
    parse_query,
    search_text,
    split_highlights,
)


def test_words_are_lower_cased_and_split_at_anything_but_letters_and_digits():
    query = parse_query("PDF-Report, v2_final")
    assert query.terms == (Term("pdf"), Term("report"), Term("v2"), Term("final"))


def test_a_trailing_star_makes_a_prefix():
    assert parse_query("repo* x").terms == (Term("repo", prefix=True), Term("x"))


def test_stop_words_are_dropped_and_repeats_kept_once():
    assert parse_query("the report of the reports").terms == (Term("report"), Term("reports"))
    assert parse_query("the and of").terms == ()


def test_query_syntax_never_reaches_the_database():
    hostile = "a\" OR name:* NEAR(b c) -d ) & !e | f:* ' ; --"
    query = parse_query(hostile)
    for term in query.terms:
        assert term.word.isalnum(), term
    assert all(part.startswith('"') for part in query.fts5().split(" AND "))
    assert set(query.tsquery()) <= set("abcdefghijklmnopqrstuvwxyz0123456789 &:*")


@given(st.text(max_size=200))
def test_any_text_parses_into_safe_terms(text):
    query = parse_query(text)
    assert len(query.terms) <= MAX_TERMS
    for term in query.terms:
        assert term.word
        assert all(ch.isalnum() for ch in term.word)
        assert term.word not in STOP_WORDS or term.prefix


def test_the_document_holds_name_description_triggers_and_body():
    text = search_text(
        "pdf-report",
        b"---\nname: pdf-report\ndescription: Printable reports.\nmetadata:\n"
        b"  triggers: |\n    make a pdf\n\n    print my tables  \n---\n\n# PDF\n\nUse tables.\n",
    )
    assert text.name == "pdf report"
    assert text.description == "Printable reports."
    assert text.triggers == ("make a pdf", "print my tables")
    assert text.body == "\n# PDF\n\nUse tables.\n"


def test_a_skill_md_that_no_longer_parses_is_indexed_as_text():
    text = search_text("old", b"no frontmatter here, just words\n")
    assert (text.name, text.description, text.triggers) == ("old", "", ())
    assert "just words" in text.body


def test_markers_and_oversized_bodies_are_kept_out_of_documents():
    body = f"a{MARK_START}b{MARK_END}c " + "x" * (MAX_INDEXED_BODY + 10)
    text = search_text("s", f"---\nname: s\ndescription: d\n---\n{body}".encode())
    assert MARK_START not in text.body
    assert MARK_END not in text.body
    assert len(text.body) == MAX_INDEXED_BODY


def test_highlights_become_ranges_of_a_one_line_snippet():
    snippet, ranges = split_highlights(
        f"\n  Use {MARK_START}tables{MARK_END}\n\nfor {MARK_START}PDF {MARK_END}"
    )
    assert snippet == "Use tables for PDF"
    assert [snippet[a:b] for a, b in ranges] == ["tables", "PDF"]
