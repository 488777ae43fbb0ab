package platform

import "os/exec"

// Detach makes cmd run on after the process that starts it (a hook,
// which Claude Code waits for and may kill with its process group or
// console): no controlling terminal, its own group, no console window.
// cmd's standard streams should be files or nil.
func Detach(cmd *exec.Cmd) { detach(cmd) }
