// Package embed is a client for embedding servers, for the semantic leg
// of anamnesis's search: Ollama (POST /api/embed) and any server speaking
// OpenAI's embeddings API (POST /v1/embeddings: llama.cpp's server, LM
// Studio, vLLM, hosted APIs). It batches, bounds each request with a
// timeout, and turns every failure into one line that names the server:
// a search that cannot embed its query falls back to BM25 and says why.
package embed
