// Package githooks installs, chains and removes the git hooks anamnesis
// puts in memory/. go-git runs no hooks, and a person may run the git CLI
// in memory/ (a hand `git pull`, a checkout, a rebase), so hooks installed
// there call `anamnesis hook NAME`, which reconciles the index.
// Installation is idempotent (a marker line identifies our scripts),
// atomic, keeps a hook that was already there as <hook>.anamnesis-prev and
// runs it after ours, honours core.hooksPath, and never makes the git
// command fail.
package githooks
