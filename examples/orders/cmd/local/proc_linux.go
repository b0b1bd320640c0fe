package main

import "syscall"

// sysProcAttr puts moto's server in its own process group, and has the
// kernel end it if this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
