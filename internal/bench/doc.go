// Package bench measures the figures the issues set targets for: full
// reindex, reconcile after a few edits, in-process search latency, the
// wall time of CLI processes, and write throughput, on synthetic stores
// of a given size (package synth). cmd/anamnesis-bench prints them.
package bench
