//go:build !linux

package main

import "syscall"

// sysProcAttr puts moto's server in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
