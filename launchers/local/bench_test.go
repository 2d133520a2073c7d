package local_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// BenchmarkRun measures one run of probe (one event) from Submit to its
// result, one at a time: in-process (memory control plane) and as a
// `sortie worker` subprocess (SQLite control plane shared with the worker).
func BenchmarkRun(b *testing.B) {
	b.Run("in-process", func(b *testing.B) {
		l, cp := newInProcess(b, io.Discard, nil)
		benchmarkRuns(b, l, cp)
	})
	b.Run("subprocess", func(b *testing.B) {
		l, cp, _ := newSubprocess(b, nil)
		benchmarkRuns(b, l, cp)
	})
}

func benchmarkRuns(b *testing.B, l interface {
	sortie.Launcher
	Shutdown(context.Context) error
}, cp sortie.ControlPlane) {
	defer cp.Close()
	defer l.Shutdown(context.Background())
	e := sortie.NewEngine(cp, l, sortie.Agents{"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}}, nil)
	defer e.Close()
	c := sortie.NewClient(e, &sortie.ClientOptions{PollInterval: time.Millisecond})
	req := &sortie.SubmitRequest{Agent: "probe", Variables: []byte(`{"events":1}`)}
	for b.Loop() {
		run, err := c.Submit(b.Context(), req)
		if err != nil {
			b.Fatalf("Submit(probe) = %v", err)
		}
		if run, err = c.Wait(b.Context(), run.ID); err != nil || run.State != sortie.StateCompleted {
			b.Fatalf("Wait(%s) = %v, %v, want completed", run.ID, run, err)
		}
	}
}
