// Package logfile keeps the reports of anamnesis's detached background
// processes (a sync or reindex a hook started) in <home>/state: each
// process collects its output in a LogBuffer, every line stamped with time
// and pid, and appends it as one block when it ends (AppendLog), so
// reports of processes started by several sessions at once never
// interleave and none truncates another's. State directories are private
// to the user (PrivateDir).
package logfile
