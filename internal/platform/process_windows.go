//go:build windows

package platform

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// detach starts the process without a console (DETACHED_PROCESS: no
// window flashes up, and closing the hook's console does not end it) in
// a group of its own (CREATE_NEW_PROCESS_GROUP: Ctrl-C and Ctrl-Break
// sent to the hook's group do not reach it).
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP,
		HideWindow:    true,
	}
}
