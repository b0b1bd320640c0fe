package lambdaproc

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
)

// ErrNoEmulator is matched (errors.Is) by the error of a bootstrap built
// for another architecture than the host's when there is no user-mode
// emulator for it on PATH (or the host is not Linux).
var ErrNoEmulator = errors.New("lambdaproc: no emulator for the bootstrap's architecture")

// machines maps the ELF machines of Lambda's architectures, and of the
// hosts that may emulate them, to GOARCH.
var machines = map[elf.Machine]string{
	elf.EM_AARCH64: "arm64",
	elf.EM_X86_64:  "amd64",
}

// qemuNames maps GOARCH to the suffix of QEMU's user-mode emulator
// (qemu-aarch64, qemu-x86_64).
var qemuNames = map[string]string{
	"arm64": "aarch64",
	"amd64": "x86_64",
}

// Emulator returns the path of the user-mode emulator that runs a
// linux/goarch executable on this host: "" when the host runs it itself
// (linux/goarch), else qemu-<arch> as found on PATH. It returns an error
// matching ErrNoEmulator when there is none.
func Emulator(goarch string) (string, error) {
	if runtime.GOOS == "linux" && goarch == runtime.GOARCH {
		return "", nil
	}
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("%w: a linux/%s executable needs a Linux host (this is %s/%s)", ErrNoEmulator, goarch, runtime.GOOS, runtime.GOARCH)
	}
	name, ok := qemuNames[goarch]
	if !ok {
		return "", fmt.Errorf("%w: no known emulator for linux/%s on this %s host", ErrNoEmulator, goarch, runtime.GOARCH)
	}
	path, err := exec.LookPath("qemu-" + name)
	if err != nil {
		return "", fmt.Errorf("%w: a linux/%s executable needs qemu-%s on this %s host (Debian's qemu-user; tools/qemu/install.sh installs it): %w",
			ErrNoEmulator, goarch, name, runtime.GOARCH, err)
	}
	return path, nil
}

// Command returns the command line that runs bootstrap on this host: the
// bootstrap itself, or, for an ELF executable of another architecture,
// its emulator (Emulator) with the bootstrap as argument. A bootstrap
// that is not an ELF file (a script) runs as it is.
func Command(bootstrap string) ([]string, error) {
	if _, err := os.Stat(bootstrap); err != nil {
		return nil, fmt.Errorf("lambdaproc: bootstrap: %w", err)
	}
	f, err := elf.Open(bootstrap)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return []string{bootstrap}, nil // not ELF
		}
		return nil, fmt.Errorf("lambdaproc: bootstrap: %w", err)
	}
	machine := f.Machine
	_ = f.Close()
	goarch, ok := machines[machine]
	if !ok {
		return nil, fmt.Errorf("%w: %s is an executable for %s", ErrNoEmulator, bootstrap, machine)
	}
	emulator, err := Emulator(goarch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bootstrap, err)
	}
	if emulator == "" {
		return []string{bootstrap}, nil
	}
	return []string{emulator, bootstrap}, nil
}
