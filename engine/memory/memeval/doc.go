// Package memeval is the retrieval evaluation harness for the memory index
// (`make eval-memory`): it loads LoCoMo-style conversations with questions
// whose answers are known to lie in given turns, writes each conversation as
// the memory notes the assistant would have written, and scores the passages
// a search returns against those turns. The driver that indexes the notes and
// runs the searches lives elsewhere; this package only loads, writes and
// counts, so that every retrieval method is counted the same way.
//
// # Data
//
// [Load] reads the locomo-dev JSON (shared/bench/README.md). It is
// licensed CC BY-NC and must never be copied into this repository; tests
// read it from ../shared/bench/locomo-dev/ beside the module root, or from
// $OPENCLAW_SHARED/bench/locomo-dev/, and skip when it is absent. The data
// has quirks that Load normalises: an answer may be a number; an evidence
// entry may hold several ids ("D8:6; D9:17"), be malformed ("D:11:26" is
// read as D11:26, a bare "D" is dropped) or name a turn that does not exist
// (D10:19 of conv-42, kept by Load, not counted by [Evaluate]); a
// conversation may carry session_N_date_time keys for sessions that have no
// turns (conv-26 has 16), which are ignored; turn text may contain newlines;
// blip_caption is often absent.
//
// # Notes
//
// [WriteNotes] writes one file per calendar date, memory/YYYY-MM-DD.md (the
// path of the assistant's daily note), holding every session of that date in
// order, each under its own time heading:
//
//	# 2023-05-08
//
//	## 1:56 pm (session 1)
//
//	- [D1:1] Caroline: Hey Mel! Good to see you! How have you been?
//	- [D1:5] Caroline: The transgender stories were so inspiring! (shared a photo: a photo of a dog walking past a wall)
//
// Two sessions on the same date therefore share a file, the second under a
// second "## time" heading. Each turn is exactly one line (newlines in the
// text become spaces) and keeps its dia_id, so a turn's location is a path
// and a 1-based line number ([Loc]).
//
// # Scoring
//
// [Scored] keeps the questions that retrieval can be scored on: category 5
// (adversarial, no answer in the conversation) and questions without
// evidence are skipped, leaving 760 on locomo-dev. [Evaluate] takes the
// passages a search returned, best first, each a path and an inclusive line
// range. An evidence turn is found at rank r when the r-th passage's range
// covers its line; it counts once however many passages cover it. recall@k
// is the share of the question's evidence turns found within the top k,
// hit@k whether at least one is, and the reciprocal rank is 1/r for the
// first passage covering any evidence turn (0 if none does). Passages are
// ranks as returned: a duplicate passage takes a rank of its own. Evidence
// ids with no turn in the notes are reported and left out of the
// denominator. [Accumulator] averages the per-question scores overall and
// per category (macro over questions, as the README's floor is counted).
//
// # Granularity
//
// The README's floor (recall@5 0.516 on 760 questions) is plain BM25 with
// one document per turn; [FloorBM25] reproduces it from the written notes
// (recall@1 0.304, @5 0.522, @10 0.587, @20 0.645, hit@5 0.571, MRR 0.444
// against the README's 0.303, 0.516, 0.588, 0.639, 0.566, 0.438). What it
// takes: the document is the whole note line, speaker name and photo caption
// included (without the speaker: recall@5 0.50, MRR 0.41), and the stop
// list is [StopWords], some fifty words (with only articles, forms of be
// and a few prepositions: recall@5 0.47, MRR 0.38); ties and documents that
// match nothing do not matter.
// A passage of many turns (the index cuts ~400-token chunks, a dozen turns
// or more) covers more evidence per rank, so passage-level recall is higher
// than per-turn recall for the same ranking quality. The driver must report
// the granularity it scored at and compare against a BM25 floor computed at
// that same granularity ([BM25] ranks any list of passage texts).
package memeval
