package gitsync

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendQueue returns how many bytes written to c the kernel still holds
// unsent (SIOCOUTQ); ok is false when that cannot be read.
func sendQueue(c net.Conn) (n int, ok bool) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var qerr error
	if err := raw.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
		return 0, false
	}
	return n, true
}
