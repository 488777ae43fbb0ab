// Package eval measures recall: how well a search ranks the notes a query
// is about. A dataset is JSONL, one {"query": "...", "relevant": ["id",
// ...]} per line; metrics are recall@k (the fraction of relevant notes in
// the top k, so a query about two notes gets half credit for finding one),
// MRR (1/rank of the first relevant hit among the top MaxK), latency, and
// the tokens a top-k answer would inject (characters/4, a standard rough
// estimate). The self-eval builds queries from a store's own notes so any
// user can measure their memory in one command.
package eval
