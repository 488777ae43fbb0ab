// Package claudecode is anamnesis's side of Claude Code's hook protocol:
// reading a hook's stdin (Input), choosing and rendering the memory
// injected at SessionStart and on each prompt, turning a session
// transcript into one redacted episodic note when the session did
// something worth keeping (Capture, WorthKeeping), remembering per session
// what it was shown, and installing the hooks and the MCP server in
// Claude Code's settings.
//
// The hooks are written against Memory, a small interface the root
// package's Store satisfies: this package decides what Claude sees and
// how, the Store decides which notes qualify. Nothing here starts a
// process: a Result says when a background sync is worth starting, and
// the command acts on it.
package claudecode
