// Package parallel runs the iterations of a loop on several goroutines:
// the one way the walk of the note files, sync's stat of the worktree and
// the reindex's reading of note files spread their work over the cores.
package parallel
