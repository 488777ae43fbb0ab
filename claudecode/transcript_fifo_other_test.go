//go:build !unix

package claudecode

import "errors"

func mkfifo(string) error { return errors.New("no mkfifo on this system") }
