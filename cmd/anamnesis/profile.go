package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profileEnv names a file to write a CPU profile of the whole process to:
// the way to see where a command's time goes as users run it (hooks,
// syncs started in the background), which a Go benchmark of one package
// cannot show. For developers; read with `go tool pprof`.
const profileEnv = "ANAMNESIS_CPUPROFILE"

// memProfileEnv names a file to write the process's heap profile to when
// it ends: every allocation made (go tool pprof -sample_index=alloc_space)
// and what was still live, to find where a command's peak memory goes.
const memProfileEnv = "ANAMNESIS_MEMPROFILE"

// startProfile starts a CPU profile into path and a heap profile into
// memPath, each when set, and returns the function that ends them. A profile that cannot start is reported and
// the command runs anyway: a profile never changes what the command does.
func startProfile(path, memPath string) (stop func()) {
	if memPath != "" {
		runtime.MemProfileRate = 64 << 10 // every 64 KiB: finer than the default 512 KiB, cheap enough for a whole run
	}
	stopMem := func() {
		if memPath == "" {
			return
		}
		f, err := os.Create(memPath)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "anamnesis: %s: %v\n", memProfileEnv, err)
		}
	}
	if path == "" {
		return stopMem
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "anamnesis: %s: %v\n", profileEnv, err)
		return stopMem
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "anamnesis: %s: %v\n", profileEnv, err)
		f.Close()
		return stopMem
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		stopMem()
	}
}
