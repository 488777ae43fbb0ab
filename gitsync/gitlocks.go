package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StaleGitLocks lists git's own lock files in gitDir (index.lock,
// HEAD.lock, packed-refs.lock, refs/**/*.lock, ...) whose modification
// time is older than age. git holds them for milliseconds; one that
// lingers was left by a git process that was killed, and until it goes
// every git command in the repository fails with "File exists". Our own
// flock (anamnesis.lock) is not listed: the kernel releases it.
func StaleGitLocks(gitDir string, age time.Duration) ([]string, error) {
	cutoff := time.Now().Add(-age)
	var out []string
	consider := func(p string, info os.FileInfo) {
		if info.Mode().IsRegular() && filepath.Ext(p) == ".lock" && filepath.Base(p) != "anamnesis.lock" && info.ModTime().Before(cutoff) {
			out = append(out, p)
		}
	}
	top, err := os.ReadDir(gitDir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", gitDir, err)
	}
	for _, e := range top {
		if e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil {
			consider(filepath.Join(gitDir, e.Name()), info)
		}
	}
	refs := filepath.Join(gitDir, "refs")
	err = filepath.Walk(refs, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		consider(p, info)
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("walk %s: %w", refs, err)
	}
	return out, nil
}

// RemoveStaleGitLocks removes what StaleGitLocks finds, holding the
// anamnesis lock meanwhile so that no sync of ours is between creating
// and renaming a lock file. The age threshold is what keeps a running
// hand `git` safe: it never holds a lock file that long.
func RemoveStaleGitLocks(ctx context.Context, gitDir string, age time.Duration) ([]string, error) {
	l, err := Acquire(ctx, gitDir, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	stale, err := StaleGitLocks(gitDir, age)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("remove stale git lock %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
