// Package e2e holds end-to-end tests against real clients: the Claude Code
// CLI (npm @anthropic-ai/claude-code) driven against a fake Anthropic API
// on 127.0.0.1, and the MCP Inspector CLI. They install the npm packages
// themselves into a cache directory, so they build with the e2e tag and
// run with `make e2e`, which .ci/run calls after `make test`.
package e2e
