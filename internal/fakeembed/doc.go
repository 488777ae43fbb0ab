// Package fakeembed is a deterministic embedding server for tests,
// speaking Ollama's /api/embed and OpenAI's /v1/embeddings on loopback.
// Its vectors make a paraphrase land near its original with no word in
// common: words map through a small synonym table to concepts, and each
// concept hashes into a few signed dimensions. Options make it slow, name
// one model only, demand a key, or answer vectors of the wrong size.
package fakeembed
