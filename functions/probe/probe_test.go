package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
)

// execute runs the probe with vars on attempt (with resume data when
// resume is set) and returns the events and outcome it reported.
func execute(t *testing.T, ctx context.Context, vars string, attempt int, resume *sortie.Resume) ([]sortie.Event, sortie.Outcome) {
	t.Helper()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	inv := &sortie.Invocation{
		Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: attempt,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(vars), Resume: resume,
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 1000, LeaseMs: 3000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane},
	}
	var out bytes.Buffer
	o, err := w.Execute(ctx, inv, functions.NewStreamReporter(&out))
	if err != nil {
		t.Fatalf("Execute(probe %s) = %v", vars, err)
	}
	var events []sortie.Event
	r := functions.NewMessageReader(&out)
	for {
		m, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading the probe's messages: %v", err)
		}
		if m.Event != nil {
			events = append(events, *m.Event)
		}
	}
	return events, o
}

func errorOf(o sortie.Outcome) sortie.ErrorMessage {
	if o.Error == nil {
		return sortie.ErrorMessage{}
	}
	return *o.Error
}

func TestDefaults(t *testing.T) {
	events, o := execute(t, context.Background(), "", 2, nil)
	if string(o.Result) != `{"attempt":2,"events":3}` {
		t.Errorf("probe {} result = %s, want {\"attempt\":2,\"events\":3}", o.Result)
	}
	var texts []string
	for _, e := range events {
		texts = append(texts, e.Kind+": "+e.Text+" "+string(e.Data))
	}
	want := []string{`progress: event 1 of 3 {"i":1}`, `progress: event 2 of 3 {"i":2}`, `progress: event 3 of 3 {"i":3}`}
	if d := cmp.Diff(want, texts); d != "" {
		t.Errorf("probe {} events (-want +got):\n%s", d)
	}
}

func TestOutputAndEvents(t *testing.T) {
	events, o := execute(t, context.Background(), `{"events":0,"interval_ms":1,"output":{"x":[1,"two"]}}`, 1, nil)
	if len(events) != 0 || string(o.Result) != `{"x":[1,"two"]}` {
		t.Errorf("probe events 0 with output: %d events, result %s; want 0 and {\"x\":[1,\"two\"]}", len(events), o.Result)
	}
	if events, _ := execute(t, context.Background(), `{"events":5,"interval_ms":1}`, 1, nil); len(events) != 5 {
		t.Errorf("probe events 5: got %d events", len(events))
	}
}

func TestText(t *testing.T) {
	events, _ := execute(t, context.Background(), `{"events":2,"text":"<b>x</b>"}`, 1, nil)
	var texts []string
	for _, e := range events {
		texts = append(texts, e.Text)
	}
	if diff := cmp.Diff([]string{"<b>x</b>", "<b>x</b>"}, texts); diff != "" {
		t.Errorf("probe events 2 with text: texts (-want +got):\n%s", diff)
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		vars    string
		attempt int
		want    sortie.ErrorMessage
	}{
		{`{"fail":"broken"}`, 1, sortie.ErrorMessage{Type: "error", Message: "broken"}},
		{`{"fail":"flaky","retryable":true}`, 5, sortie.ErrorMessage{Type: "error", Message: "flaky", Retryable: true}},
		{`{"fail":"flaky","retryable":true,"fail_attempts":2}`, 2, sortie.ErrorMessage{Type: "error", Message: "flaky", Retryable: true}},
		{`{"fail":"flaky","retryable":true,"fail_attempts":2}`, 3, sortie.ErrorMessage{}},
		{`{"panic":true}`, 1, sortie.ErrorMessage{Type: "panic", Message: "handler panicked: probe: panic requested"}},
		{`{"events":-1}`, 1, sortie.ErrorMessage{Type: "invalid_argument", Message: "invalid variables.events: -1 outside 0..10000"}},
		{`{"interrupt":"failed"}`, 1, sortie.ErrorMessage{Type: "invalid_argument", Message: `invalid variables.interrupt: "failed" must be input-required or auth-required`}},
	}
	for _, tt := range tests {
		_, o := execute(t, context.Background(), tt.vars, tt.attempt, nil)
		if d := cmp.Diff(tt.want, errorOf(o)); d != "" {
			t.Errorf("probe %s on attempt %d: error (-want +got):\n%s", tt.vars, tt.attempt, d)
		}
	}
}

func TestInterrupt(t *testing.T) {
	_, o := execute(t, context.Background(), `{"events":0,"interrupt":"auth-required"}`, 1, nil)
	want := &sortie.Interrupt{State: sortie.StateAuthRequired, Prompt: "need input", Checkpoint: json.RawMessage(`{"step":1}`)}
	if d := cmp.Diff(want, o.Interrupt); d != "" {
		t.Errorf("probe interrupt without resume data (-want +got):\n%s", d)
	}
	resume := &sortie.Resume{Checkpoint: json.RawMessage(`{"step":1}`), Input: json.RawMessage(`{"token":"t"}`)}
	_, o = execute(t, context.Background(), `{"events":0,"interrupt":"auth-required"}`, 2, resume)
	if want := `{"checkpoint":{"step":1},"resumed_with":{"token":"t"}}`; string(o.Result) != want {
		t.Errorf("probe interrupt when resumed: outcome %+v, want result %s", o, want)
	}
}

func TestCrashCallsExitHook(t *testing.T) {
	var codes []int
	old := probe.Exit
	probe.Exit = func(code int) { codes = append(codes, code) }
	t.Cleanup(func() { probe.Exit = old })

	events, o := execute(t, context.Background(), `{"events":2,"crash_attempts":1}`, 1, nil)
	if !cmp.Equal(codes, []int{probe.CrashExitCode}) || len(events) != 2 {
		t.Errorf("probe crash_attempts 1 on attempt 1: exit codes %v, %d events; want [97] after 2 events", codes, len(events))
	}
	if e := errorOf(o); !e.Retryable || !strings.Contains(e.Message, "exit hook returned") {
		t.Errorf("probe crash with a returning hook finished with %+v, want a retryable error saying so", e)
	}
	codes = nil
	if _, o := execute(t, context.Background(), `{"events":0,"crash_attempts":1}`, 2, nil); len(codes) != 0 || o.Result == nil {
		t.Errorf("probe crash_attempts 1 on attempt 2: exit codes %v, outcome %+v; want no exit and a result", codes, o)
	}
}

func TestSleepAndUntilCancelledHonourContext(t *testing.T) {
	for _, vars := range []string{`{"events":0,"sleep_ms":600000}`, `{"events":1,"until_cancelled":true,"interval_ms":1}`} {
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(100*time.Millisecond, cancel) // like SIGTERM
		events, o := execute(t, ctx, vars, 1, nil)
		stop.Stop()
		cancel()
		if e := errorOf(o); e.Type != "terminated" || !e.Retryable {
			t.Errorf("probe %s stopped by its context: error %+v, want retryable type terminated", vars, e)
		}
		if strings.Contains(vars, "until_cancelled") && (len(events) < 2 || events[1].Kind != "tick") {
			t.Errorf("probe %s: events %+v, want a progress event then ticks", vars, events)
		}
	}
}

// plainOpener "opens" any configuration to its fixed plaintext.
type plainOpener string

func (p plainOpener) Open(context.Context, *sortie.Invocation) ([]byte, int, error) {
	return []byte(p), 0, nil
}

// config_names returns the names the configuration sets, not the values.
func TestConfigNames(t *testing.T) {
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InlineConfig: &functions.InlineConfig{Opener: plainOpener(`{"B_TOKEN":"secret-b","A_TOKEN":"secret-a"}`), Allow: []string{"A_TOKEN", "B_TOKEN"}}}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: sortie.NewRunID(time.Now()), Attempt: 1,
		LaunchID: sortie.NewLaunchID(), Agent: sortie.Manifest{Name: "probe", Runtime: "go:probe"},
		Variables: json.RawMessage(`{"events":0,"config_names":true}`), SealedConfig: json.RawMessage(`{"sealed":true}`),
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 1000, LeaseMs: 3000,
		Report: sortie.Report{Mode: sortie.ReportControlPlane}}
	o, err := w.Execute(context.Background(), inv, functions.NewStreamReporter(io.Discard))
	if err != nil || string(o.Result) != `{"config_names":["A_TOKEN","B_TOKEN"]}` {
		t.Errorf("probe config_names = %s, %v; want {\"config_names\":[\"A_TOKEN\",\"B_TOKEN\"]}", o.Result, err)
	}
}
