// Package consolidate plans what a model makes of a project's notes: reflect
// (episodic session notes distilled into durable ones), merge (redundant
// durable notes grouped, one kept or a synthesis written) and dedup (notes
// whose bodies are byte-identical). It only plans: the root package applies
// a plan to a Store, as one commit that supersedes and never deletes.
//
// The model sits behind the Model interface, declared here where it is used,
// with two backends: the Claude Code CLI the user is logged in to (`claude
// -p` with no tools, hooks, plugins or MCP servers of its own) and any
// OpenAI-compatible endpoint, configured as the Python tool configures it
// (ANAMNESIS_REFLECTION_* or config.json's "reflection" block). Replies in
// the Python tool's formats are accepted, and everything sent is redacted
// first with capture's redaction.
//
// Cost is bounded before each call by a Budget: calls per run, and calls,
// input characters and dollars (where a backend reports them) per day,
// kept in a state file so that every process sees the same day.
package consolidate
