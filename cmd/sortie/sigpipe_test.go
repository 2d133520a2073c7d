package main

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sortie-run/sortie"
)

// `sortie run ... --json | head -3`: a reader that goes away ends the
// command as Ctrl-C does (exit 130, the follow hint on stderr; the
// attempt ends terminated, the run left working for a reconciler to
// retry), not with a SIGPIPE death that leaves the attempt live.
func TestClosedStdoutStopsLikeCtrlC(t *testing.T) {
	for name, stop := range map[string]func(*exec.Cmd, func() error){
		"stdout closed": func(_ *exec.Cmd, closeStdout func() error) { closeStdout() },
		"Ctrl-C":        func(cmd *exec.Cmd, _ func() error) { cmd.Process.Signal(syscall.SIGINT) },
	} {
		t.Run(name, func(t *testing.T) {
			c := newCLI(t)
			cmd := c.cmd("run", "probe", "--var", "events=500", "--var", "interval_ms=20")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			for i := 0; i < 3; i++ {
				if !sc.Scan() {
					t.Fatalf("sortie run printed %d lines, want 3 events (%v)", i, sc.Err())
				}
			}
			stop(cmd, out.Close)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "stopped following; the run goes on") {
				t.Fatalf("sortie run after %s: %v (exit %d), stderr %q; want exit 130 and the follow hint", name, err, ee.ExitCode(), stderr.String())
			}
			m := submittedRE.FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("sortie run stderr %q names no run ID", stderr.String())
			}
			run := c.get(sortie.RunID(m[1]))
			a := run.Current()
			if run.State != sortie.StateWorking || a == nil || !a.Ended() || a.Error == nil || a.Error.Type != "terminated" {
				t.Errorf("run after %s = %s, attempt %+v; want working with attempt 1 ended terminated", name, run.State, a)
			}
		})
	}
}
