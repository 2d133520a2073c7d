// Package procstatus describes how a child process ended as a
// [sortie.Status], for the launchers and the worker runtime that reap
// their workers.
package procstatus

import (
	"fmt"
	"os"

	"github.com/sortie-run/sortie"
)

// Of describes a reaped child named who ("worker"): succeeded for exit
// code 0; failed otherwise, with its exit code (-1 when a signal ended it)
// and the signal's name ("SIGKILL"); unknown when ps is nil, waitErr
// saying why.
func Of(who string, ps *os.ProcessState, waitErr error) sortie.Status {
	if ps == nil {
		return sortie.Status{Phase: sortie.PhaseUnknown, Reason: fmt.Sprintf("wait for %s: %v", who, waitErr)}
	}
	code := ps.ExitCode()
	if code == 0 {
		return sortie.Status{Phase: sortie.PhaseSucceeded, ExitCode: &code}
	}
	return sortie.Status{Phase: sortie.PhaseFailed, Reason: fmt.Sprintf("%s %s", who, ps), ExitCode: &code, Signal: signal(ps)}
}
