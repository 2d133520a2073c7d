package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sortie-run/sortie"
)

// scriptWorker returns a worker whose runtime "exec:ID" runs script (in
// testdata) with sh or python3.
func scriptWorker(t *testing.T, id, script string, graceMs int64, args ...string) (*Worker, *logBuffer) {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	prog := "/bin/sh"
	if strings.HasSuffix(script, ".py") {
		specs, err := LoadExecRuntimes("../examples/runtimes.json") // finds python3
		if err != nil {
			t.Fatal(err)
		}
		prog = specs["wordfreq-py"].Command[0]
	}
	w, logs := newWorker(NewRegistry())
	w.Exec = map[string]ExecSpec{id: {
		Command: append([]string{prog, filepath.Join(dir, script)}, args...),
		Dir:     dir, Env: []string{"PATH=/usr/bin:/bin", "FOO=bar"}, GraceMs: graceMs,
	}}
	return w, logs
}

func eventKinds(events []sortie.Event) []string {
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// wordfreqWorker returns a worker running examples/wordfreq-py, as a
// command per attempt or (session) in a pool of warm processes.
func wordfreqWorker(t *testing.T, session bool) (*Worker, *logBuffer, *Pool) {
	t.Helper()
	specs, err := LoadExecRuntimes("../examples/runtimes.json")
	if err != nil {
		t.Fatal(err)
	}
	w, logs := newWorker(NewRegistry())
	if !session {
		spec := specs["wordfreq-py"]
		spec.Protocol = ""
		w.Exec = map[string]ExecSpec{"wordfreq-py": spec}
		return w, logs, nil
	}
	w.Exec = specs
	if w.Warm, err = NewPools(specs, &PoolOptions{Logger: w.Logger}); err != nil {
		t.Fatal(err)
	}
	pool := w.Warm["exec:wordfreq-py"]
	t.Cleanup(func() { pool.Close(context.Background()) })
	return w, logs, pool
}

func TestExecWordfreqPython(t *testing.T) {
	for _, session := range []bool{false, true} {
		t.Run(fmt.Sprintf("session=%v", session), func(t *testing.T) {
			w, logs, pool := wordfreqWorker(t, session)
			for range 2 {
				checkWordfreq(t, w, logs)
			}
			if pool != nil && pool.Stats().Started != 1 {
				t.Errorf("pool stats after 4 attempts = %+v, want one warm process", pool.Stats())
			}
		})
	}
}

func checkWordfreq(t *testing.T, w *Worker, logs *logBuffer) {
	t.Helper()
	rep := newRecorder(t)
	inv := testInvocation("exec:wordfreq-py", `{"text":"The cat saw the hat.\nThe end, the END!","top":3}`)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	got := rep.finished()
	if want := `{"words":9,"top":[["the",4],["end",2],["cat",1]]}`; string(got.Result) != want {
		t.Errorf("wordfreq-py finished with %+v, want result %s", got, want)
	}
	events, _, _ := rep.snapshot()
	want := []string{EventStepStarted, "wordfreq.step", "progress", EventStepCompleted, // count
		EventStepStarted, "wordfreq.step", EventStepCompleted, // rank
		EventStepStarted, "wordfreq.step", EventStepCompleted, // summarise
		"progress"}
	if d := cmp.Diff(want, eventKinds(events)); d != "" || events[len(events)-1].Seq != int64(len(want)) {
		t.Errorf("wordfreq-py event kinds (-want +got), numbered 1..%d:\n%s", len(want), d)
	}
	if len(rep.steps) != 3 || rep.steps[2].Name != "summarise" || string(rep.steps[2].Result) != `"counted 9 words, 5 distinct"` {
		t.Errorf("wordfreq-py recorded steps %+v, want count, rank and summarise", rep.steps)
	}
	if !strings.Contains(logs.String(), "wordfreq-py: run "+string(inv.RunID)) {
		t.Errorf("logs = %q, want the worker's stderr line", logs.String())
	}

	rep = newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:wordfreq-py", `{"text":7}`), rep); err != nil {
		t.Fatal(err)
	}
	wantErr := &sortie.ErrorMessage{Type: "invalid_argument", Message: "variables.text: must be a string, got int"}
	if d := cmp.Diff(wantErr, rep.finished().Error); d != "" {
		t.Errorf("wordfreq-py with text 7 (-want +got):\n%s", d)
	}
}

func TestExecEnvironmentIsTheAllowlist(t *testing.T) {
	t.Setenv("SORTIE_TEST_SECRET", "hunter2")
	w, _ := scriptWorker(t, "env", "env.sh", 0)
	rep := newRecorder(t)
	inv := testInvocation("exec:env", `{"a":1}`)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	events, _, _ := rep.snapshot()
	dir, _ := filepath.Abs("testdata")
	if want := "secret=unset foo=bar home=unset dir=" + dir; len(events) != 1 || events[0].Text != want {
		t.Errorf("env.sh saw %+v, want one event %q", events, want)
	}
	var echoed sortie.Invocation
	if err := json.Unmarshal(rep.finished().Result, &echoed); err != nil {
		t.Fatalf("env.sh result is not the invocation: %v", err)
	}
	if d := cmp.Diff(inv, &echoed); d != "" {
		t.Errorf("invocation on the worker's stdin (-sent +read):\n%s", d)
	}
}

func TestExecCrashWithoutResult(t *testing.T) {
	w, logs := scriptWorker(t, "crash", "crash.sh", 0)
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:crash", ""), rep); err != nil {
		t.Fatal(err)
	}
	got := rep.finished().Error
	if got == nil || got.Type != "exit" || !got.Retryable || !strings.Contains(got.Message, "exit status 3") {
		t.Errorf("crash.sh finished with %+v, want a retryable error of type exit naming exit status 3", got)
	}
	if events, _, _ := rep.snapshot(); len(events) != 1 || events[0].Text != "about to crash" {
		t.Errorf("crash.sh events = %+v, want its one event kept", events)
	}
	if !strings.Contains(logs.String(), "crash.sh: giving up") {
		t.Errorf("logs = %q, want the worker's stderr", logs.String())
	}
}

func TestExecSilentExit(t *testing.T) {
	w, _ := scriptWorker(t, "silent", "silent.sh", 0)
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:silent", ""), rep); err != nil {
		t.Fatal(err)
	}
	if got := rep.finished().Error; got == nil || got.Type != "exit" || !strings.Contains(got.Message, "exit status 0") {
		t.Errorf("silent.sh finished with %+v, want an error of type exit naming exit status 0", got)
	}
}

func TestExecInvalidLineKeepsEarlierEvents(t *testing.T) {
	w, _ := scriptWorker(t, "bad", "badline.sh", 0)
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:bad", ""), rep); err != nil {
		t.Fatal(err)
	}
	got := rep.finished().Error
	if got == nil || got.Type != "protocol" || got.Retryable || !strings.Contains(got.Message, "line 3") || !strings.Contains(got.Message, "event.kind") {
		t.Errorf("badline.sh finished with %+v, want a non-retryable protocol error naming line 3 and event.kind", got)
	}
	events, _, _ := rep.snapshot()
	want := []sortie.Event{{Seq: 1, Kind: "progress", Text: "one"}, {Seq: 2, Kind: "progress", Text: "two"}}
	if d := cmp.Diff(want, events, cmpopts.IgnoreFields(sortie.Event{}, "TimeMs")); d != "" {
		t.Errorf("events before the invalid line (-want +got):\n%s", d)
	}
}

func TestExecWorkerNumberedEvents(t *testing.T) {
	w, _ := scriptWorker(t, "seq", "seq.sh", 0, "good")
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:seq", ""), rep); err != nil {
		t.Fatal(err)
	}
	events, _, _ := rep.snapshot()
	if string(rep.finished().Result) != `"numbered"` || !cmp.Equal(eventKinds(events), []string{"a", "b", "c"}) || events[2].Seq != 3 {
		t.Errorf("seq.sh good: events %+v, outcome %+v; want a, b, c as 1-3 and result \"numbered\"", events, rep.finished())
	}

	w, _ = scriptWorker(t, "seq", "seq.sh", 0, "gap")
	rep = newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:seq", ""), rep); err != nil {
		t.Fatal(err)
	}
	got := rep.finished().Error
	if got == nil || got.Type != "protocol" || !strings.Contains(got.Message, "line 2") || !strings.Contains(got.Message, "event.seq") {
		t.Errorf("seq.sh gap finished with %+v, want a protocol error naming line 2 and event.seq", got)
	}
}

// liveInGroup returns the processes of group pgid that are not zombies.
func liveInGroup(t *testing.T, pgid int) []string {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		var state string
		var ppid, pgrp int
		if _, err := fmt.Sscanf(s[strings.LastIndexByte(s, ')')+1:], " %s %d %d", &state, &ppid, &pgrp); err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		if pgrp == pgid && state != "Z" {
			live = append(live, s)
		}
	}
	return live
}

func TestExecHangKilledOnCancel(t *testing.T) {
	w, logs := scriptWorker(t, "hang", "hang.sh", 100)
	rep := newRecorder(t)
	done := executeAsync(w, context.Background(), testInvocation("exec:hang", ""), rep)
	waitFor(t, "hang.sh's pid event", func() bool { e, _, _ := rep.snapshot(); return len(e) == 1 })
	rep.cancel.Store(true)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantError(t, "hang.sh after a cancel request", rep.finished().Error, sortie.ErrorTypeCancelled, false)
	events, _, _ := rep.snapshot()
	var data struct{ PID int }
	if err := json.Unmarshal(events[0].Data, &data); err != nil || data.PID == 0 {
		t.Fatalf("hang.sh pid event %+v: %v", events[0], err)
	}
	if err := syscall.Kill(data.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(%d, 0) after Execute returned = %v, want ESRCH (killed and reaped, no zombie)", data.PID, err)
	}
	// hang.sh's sleep, in its process group, was killed as well (init
	// reaps it).
	waitFor(t, "no live process in hang.sh's process group", func() bool { return len(liveInGroup(t, data.PID)) == 0 })
	if !strings.Contains(logs.String(), "sending SIGKILL") {
		t.Errorf("logs = %q, want SIGKILL sent after SIGTERM was ignored", logs.String())
	}
}

func TestExecGracefulStopOnTerminate(t *testing.T) {
	w, _ := scriptWorker(t, "graceful", "graceful.py", 5000)
	rep := newRecorder(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := executeAsync(w, ctx, testInvocation("exec:graceful", ""), rep)
	waitFor(t, "graceful.py's started event", func() bool { e, _, _ := rep.snapshot(); return len(e) == 1 })
	cancel()
	<-done
	wantError(t, "graceful.py after the worker's context ended", rep.finished().Error, "terminated", true)
	if msg := rep.finished().Error.Message; !strings.Contains(msg, "stopped on SIGTERM") {
		t.Errorf("terminated message %q, want the worker's own error message in it", msg)
	}
	if events, _, _ := rep.snapshot(); !cmp.Equal(eventKinds(events), []string{"started", "stopping"}) {
		t.Errorf("graceful.py events = %v, want [started stopping] (events sent while stopping are kept)", eventKinds(events))
	}
}

func TestExecStartFailure(t *testing.T) {
	w, _ := newWorker(NewRegistry())
	w.Exec = map[string]ExecSpec{"gone": {Command: []string{"/nonexistent/worker"}}}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:gone", ""), rep); err != nil {
		t.Fatal(err)
	}
	if got := rep.finished().Error; got == nil || got.Retryable || !strings.Contains(got.Message, "exec:gone: start") {
		t.Errorf("missing program finished with %+v, want a non-retryable start error", got)
	}
}

// An exec worker that reports one step name twice breaks the protocol:
// the first is recorded, the attempt fails at the second, not retryable.
func TestExecStepReportedTwice(t *testing.T) {
	w, _ := scriptWorker(t, "twice", "step-twice.sh", 0)
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), testInvocation("exec:twice", ""), rep); err != nil {
		t.Fatal(err)
	}
	e := rep.finished().Error
	if e == nil || e.Type != errTypeProtocol || e.Retryable || !strings.Contains(e.Message, `"fetch"`) {
		t.Errorf("a step reported twice finished with %+v, want a protocol error naming it", e)
	}
	if len(rep.steps) != 1 || string(rep.steps[0].Result) != "1" {
		t.Errorf("recorded %+v, want the first report only", rep.steps)
	}
}
