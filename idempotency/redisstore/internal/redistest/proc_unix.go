//go:build unix && !linux

package redistest

import "syscall"

// sysProcAttr puts the server in its own process group, so that Stop ends
// all it runs. There is no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
