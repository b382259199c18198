"""What a judge reads beside the pair labeling page: the project's guidelines, or ours when it has none."""

from __future__ import annotations

from annotate.models import Project

# Shown when a pairs project leaves its guidelines blank. Plain text, paragraphs split by blank
# lines (rendered escaped with |linebreaks). The four examples are the cases judges meet most:
# two obvious swaps (H), a synonym that keeps the meaning (N), and a word that breaks the sentence (H).
DEFAULT_PAIR_GUIDELINES = """\
Each item shows an original text and a machine-changed copy of it. One span of the copy is highlighted: \
the words a language model put in place of the highlighted words of the original. Read the original first, \
then decide about the highlighted span only; other changed spans are shown faintly and do not count for this item.

H (hallucination): given the original and the rest of the text, the highlighted span says something the \
original does not support, contradicts it, or makes the sentence incoherent. A change that adds a detail \
the original does not give is H too, even when it sounds plausible.

N (not hallucination): the span keeps the meaning of the original in this context: a synonym, a paraphrase, \
a change of wording or grammar that a careful reader would accept as saying the same thing.

? (cannot determine): use it only when you really cannot tell, for example when the text is about something \
you cannot judge. It takes your turn on the item but is not a vote: the H and N answers of the other \
judges decide.

Judge the span in its sentence, not the word on its own, and do not look anything up: the original is the \
only reference. Answer at your reading speed; the time per item is recorded.

Example 1, a changed date (H).
Original: "The bridge opened to traffic in 1911 after three years of work."
Changed: "The bridge opened to traffic in [1923] after three years of work."
The year contradicts the original: H.

Example 2, a swapped name (H).
Original: "Mayor Ines Varga cut the ribbon at the reopening."
Changed: "Mayor [Tom Price] cut the ribbon at the reopening."
A different person is named: H, however natural the sentence reads.

Example 3, a harmless synonym (N).
Original: "Engineers repaired the damaged cables over the winter."
Changed: "Engineers [fixed] the damaged cables over the winter."
"Fixed" says what "repaired" says here: N.

Example 4, an incoherent word (H).
Original: "The council approved the budget on Monday evening."
Changed: "The council approved the [purple] on Monday evening."
The sentence no longer makes sense, so the span is not supported: H.
"""


def pair_guidelines(project: Project) -> tuple[str, bool]:
    """The guidelines text to show, and whether it is our default (the project's own are blank)."""
    own = project.guidelines.strip()
    return (own, False) if own else (DEFAULT_PAIR_GUIDELINES, True)
