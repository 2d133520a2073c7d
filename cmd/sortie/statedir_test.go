package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A state directory this user cannot write is refused with a message
// naming it and the way out, not a database library's error. As root the
// command runs as nobody (root writes anywhere); otherwise the directory
// is made read-only.
func TestUnwritableStateDirIsNamed(t *testing.T) {
	dir, err := os.MkdirTemp("", "sortie-ro-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700); os.RemoveAll(dir) })
	c := &cli{t: t, state: dir}
	if r := c.run("run", "probe", "--vars", `{"events":1}`); r.code != 0 {
		t.Fatalf("sortie run = %d: %s", r.code, r.stderr)
	}
	cmd := c.cmd("list")
	if os.Geteuid() == 0 {
		for _, p := range []string{dir, filepath.Dir(sortieBin)} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(filepath.Join(dir, "sortie.db"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("sortie list on an unwritable state directory = %v, want exit 1: %s", err, out)
	}
	msg := string(out)
	if !strings.Contains(msg, "the state directory "+dir+" is not writable by this user") || !strings.Contains(msg, "--state-dir") {
		t.Errorf("sortie list on an unwritable state directory says %q, want it to name the directory and --state-dir", msg)
	}
}
