//go:build !linux

package gitsync

import "net"

// sendQueue is not available here: only reads and writes count as
// progress.
func sendQueue(net.Conn) (int, bool) { return 0, false }
