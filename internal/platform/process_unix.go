//go:build unix

package platform

import (
	"os/exec"
	"syscall"
)

// detach starts a new session: no controlling terminal, and no signal
// sent to the hook's process group (Ctrl-C in Claude Code) reaches it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
