package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sortie-run/sortie"
)

// withLogs is the payload store of a host with local workers: deleting a
// run's objects (Engine.Delete, retention) also deletes its attempts'
// logs in dir (StateDir/logs, RUN-ATTEMPT.log), which hold its events
// and small results in clear text.
type withLogs struct {
	sortie.PayloadStore
	dir string
}

// DeleteRun implements [sortie.PayloadStore]: the run's objects, then its
// attempts' logs.
func (w withLogs) DeleteRun(ctx context.Context, run sortie.RunID) error {
	return errors.Join(w.PayloadStore.DeleteRun(ctx, run), deleteRunLogs(w.dir, run))
}

// deleteRunLogs deletes the logs of run's attempts in dir: the files
// named RUN-N.log, N the attempt's number. The names are matched against
// the validated run ID, never used as a path of their own.
func deleteRunLogs(dir string, run sortie.RunID) error {
	if run.Validate() != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if !isRunLog(e.Name(), run) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isRunLog reports whether name is the log of an attempt of run:
// RUN-N.log, N decimal digits.
func isRunLog(name string, run sortie.RunID) bool {
	rest, ok := strings.CutPrefix(name, string(run)+"-")
	if !ok {
		return false
	}
	n, ok := strings.CutSuffix(rest, ".log")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}
