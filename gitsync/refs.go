package gitsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// repairTrackingRefs removes remote-tracking ref files that a killed sync
// left empty or half written, and returns their paths. go-git writes a
// loose ref in place (truncate, then write), and it updates
// refs/remotes/... itself during fetch and after a push, so a SIGKILL
// between the two leaves an empty file; every later fetch then fails with
// "ref file is empty". A tracking ref is only a copy of the remote's
// branch, and the next fetch writes it again. Our own branch is written
// with a lock file and a rename and is left alone.
func repairTrackingRefs(gitDir string) ([]string, error) {
	root := filepath.Join(gitDir, "refs", "remotes")
	var removed []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if validRefContent(string(data)) {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		removed = append(removed, p)
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("repair tracking refs in %s: %w", root, err)
	}
	return removed, nil
}

// validRefContent reports whether a loose ref file holds a whole object
// id (SHA-1 or SHA-256, hex) or a symbolic ref, with its newline.
func validRefContent(s string) bool {
	s, ok := strings.CutSuffix(s, "\n")
	if !ok {
		return false
	}
	if strings.HasPrefix(s, "ref: ") {
		return len(s) > len("ref: ")
	}
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
