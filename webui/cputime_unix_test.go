//go:build unix

package webui

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far: on the
// shared 2-core test machine wall time swings with other people's load,
// while the CPU a page costs does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
