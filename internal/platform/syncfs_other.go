//go:build unix && !linux

package platform

import "errors"

// syncOne has no syncfs(2) to call here: the caller falls back to
// sync(2).
func syncOne(string) error { return errors.ErrUnsupported }
