// Package testutil holds helpers shared by the tests of several packages:
// running the git CLI as a person would in a repository, and bare hubs.
// It imports nothing of this module, so any package's tests may use it.
package testutil
