// Package bleve is the keyword (BM25) side of the memory index: it
// implements memory.TextIndex over the chunks of the workspace's Markdown
// files with github.com/blevesearch/bleve/v2 (v2.6.1).
//
// Choices:
//
//   - Index type scorch, bleve's default (segment files, mmapped). The older
//     upsidedown/boltdb type measured 13x larger on disk and 9x more memory.
//   - Scoring model BM25 (the mapping's ScoringModel; bleve's default is
//     TF-IDF), with bleve's fixed constants k1 = 1.2 and b = 0.75. Bleve's
//     BM25 has its own details (search/scorer/scorer_term.go): tf enters as
//     sqrt(tf); the average field length is ceil(distinct terms of the field,
//     summed over segments / doc count), not the mean token count; a
//     multi-term query multiplies each term's score by idf/sqrt(sum idf²)
//     (query norm) and the sum by matched/total terms (coord). Scores are
//     comparable within one search, not across searches.
//   - Text is analysed with bleve's "en" analyzer (unicode word tokenizer,
//     possessive strip, lower case, English stop words, Porter stemming):
//     notes are conversational English, and "ran/running/runs" or
//     "memories/memory" should meet. Text is not stored (callers read
//     snippets from the files) and has no term vectors (no highlighting or
//     phrase queries): a smaller index. Path is a keyword field (one
//     unanalysed term), indexed but not stored; nothing is dynamic.
//   - Queries are plain text, never bleve's query-string syntax (a model's
//     "foo:bar", "+x -y" or `"unclosed` must neither fail nor filter): the
//     query is analysed like the text, duplicate terms dropped, the first
//     MaxQueryTerms (64) distinct terms kept (of at most the first
//     MaxQueryBytes, 16 KiB) and searched as a disjunction of term queries
//     on the text field, so each term adds its BM25 score. An empty,
//     punctuation- or stop-word-only query, or k <= 0, has no hits.
//   - Rebuild rule: the Markdown files are the source of truth, so Open
//     never fails on a broken index: when the directory exists but does not
//     open (not an index, garbled or truncated metadata or segments, another
//     mapping version, a generation mismatch) it is removed and created
//     empty, with rebuilt=true so the caller re-adds every doc. Only a
//     directory that cannot be removed (or created) is an error, naming the
//     path. The generation check exists because scorch, when the newest
//     snapshot's segment files are missing or unreadable, logs "unable to
//     load snapshot ... continuing" and silently opens an older snapshot
//     (often the empty one): each batch stores a generation in the index and,
//     after the batch is persisted, in the file openclaw-gen beside it.
//
// Measured (go test -bench, 2 shared cores of an Intel Xeon VM; docs of
// ~1600 chars drawn from a 50k-word Zipf vocabulary, 1000 docs a batch;
// queries 3-8 such words, k = 10):
//
//	search, 10k docs     ~1.8 ms     index on disk  11.5 MB
//	search, 100k docs    ~13.5 ms    index on disk  82.9 MB
//	build 10k docs       ~45 s (10 batches; each waits for persistence)
//	build 100k docs      ~10 min (same machine, other work running)
package bleve
