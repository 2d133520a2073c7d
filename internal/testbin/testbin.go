// Package testbin builds a command of this module for the tests that run
// it as a real process (a worker subprocess, a warm worker).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Main builds the package pkg ("github.com/sortie-run/sortie/cmd/sortie")
// into a temporary directory, sets *bin to the binary's path, runs m and
// removes the directory. It returns m's exit code, or 1 (after saying why
// on stderr) when the build fails; pass it to os.Exit from TestMain.
func Main(m *testing.M, pkg string, bin *string) int {
	name := path.Base(pkg)
	dir, err := os.MkdirTemp("", name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", *bin, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "testbin: go build %s: %v\n", pkg, err)
		return 1
	}
	return m.Run()
}
