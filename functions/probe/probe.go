package probe

import (
	"context"
	_ "embed" // InputSchema
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// Name is the handler's name: runtime "go:probe".
const Name = "probe"

// CrashExitCode is the status [Exit] gets for crash_attempts.
const CrashExitCode = 97

// maxEvents bounds the events variable.
const maxEvents = 10000

// maxSteps bounds the steps variable.
const maxSteps = 100

// EventStepRan is the kind of the event a probe step emits each time its
// function runs (not when it is replayed).
const EventStepRan = "probe.step"

// StepResult is what probe step I returns: its number and the attempt
// that ran it.
type StepResult struct {
	Step    int `json:"step"`
	Attempt int `json:"attempt"`
	// Pad is step_pad repeated to step_pad_bytes; empty without them.
	Pad string `json:"pad,omitempty"`
}

// maxStepPadBytes bounds step_pad_bytes.
const maxStepPadBytes = 64 << 20

// Exit ends the process for crash_attempts, without reporting anything.
// Tests may replace it; if it returns, the handler returns a retryable
// error saying so.
var Exit = os.Exit

// InputSchema is the JSON Schema of the probe's variables (see the
// package documentation), for its manifest's input_schema.
//
//go:embed input_schema.json
var InputSchema []byte

// Register adds the probe handler to r as "probe".
func Register(r *functions.Registry) { r.Register(Name, Handle) }

// Variables are the probe's variables; see the package documentation.
type Variables struct {
	Events         *int            `json:"events,omitempty"`
	IntervalMs     int64           `json:"interval_ms,omitempty"`
	Text           string          `json:"text,omitempty"`
	CrashAttempts  int             `json:"crash_attempts,omitempty"`
	Panic          bool            `json:"panic,omitempty"`
	Fail           string          `json:"fail,omitempty"`
	Retryable      bool            `json:"retryable,omitempty"`
	FailAttempts   int             `json:"fail_attempts,omitempty"`
	Interrupt      sortie.State    `json:"interrupt,omitempty"`
	SleepMs        int64           `json:"sleep_ms,omitempty"`
	UntilCancelled bool            `json:"until_cancelled,omitempty"`
	ConfigNames    bool            `json:"config_names,omitempty"`
	Steps          int             `json:"steps,omitempty"`
	CrashAfterStep int             `json:"crash_after_step,omitempty"`
	StepPad        string          `json:"step_pad,omitempty"`
	StepPadBytes   int             `json:"step_pad_bytes,omitempty"`
	SecretSteps    int             `json:"secret_steps,omitempty"`
	SecretPadBytes *int            `json:"secret_step_pad_bytes,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Model          string          `json:"model,omitempty"`
	Tool           string          `json:"tool,omitempty"`
	ToolArgs       toolArgs        `json:"tool_args,omitempty"`
	Connect        string          `json:"connect,omitempty"`
	Webhook        string          `json:"webhook,omitempty"`
}

// Handle is the probe handler.
func Handle(ctx context.Context, call *functions.Call) (any, error) {
	v, err := decode(call)
	if err != nil {
		return nil, err
	}
	n := 3
	if v.Events != nil {
		n = *v.Events
	}
	if err := emitEvents(ctx, call, n, v.IntervalMs, v.Text); err != nil {
		return nil, err
	}
	steps, err := v.runSteps(ctx, call)
	if err != nil {
		return nil, err
	}
	if out, done, err := v.act(ctx, call); done {
		return out, err
	}
	if out, ok, err := v.policy(ctx, call); ok || err != nil {
		return out, err
	}
	switch {
	case v.ConfigNames:
		return map[string][]string{"config_names": slices.Sorted(maps.Keys(call.Config()))}, nil
	case len(v.Output) > 0:
		return v.Output, nil
	case steps != nil:
		return map[string]any{"events": n, "attempt": call.Attempt(), "steps": steps}, nil
	}
	return map[string]int{"events": n, "attempt": call.Attempt()}, nil
}

func decode(call *functions.Call) (*Variables, error) {
	var v Variables
	if err := call.Variables(&v); err != nil {
		return nil, functions.Permanent(err)
	}
	if err := v.validate(); err != nil {
		return nil, functions.Permanent(err)
	}
	return &v, nil
}

func (v *Variables) validate() error {
	switch {
	case v.Events != nil && (*v.Events < 0 || *v.Events > maxEvents):
		return sortie.Invalidf("variables.events", "%d outside 0..%d", *v.Events, maxEvents)
	case v.IntervalMs < 0 || v.SleepMs < 0:
		return sortie.Invalidf("variables.interval_ms", "interval_ms and sleep_ms must not be negative")
	case v.Interrupt != "" && !v.Interrupt.Interrupted():
		return sortie.Invalidf("variables.interrupt", "%q must be input-required or auth-required", v.Interrupt)
	case v.Steps < 0 || v.Steps > maxSteps || v.CrashAfterStep < 0 || v.CrashAfterStep > v.Steps:
		return sortie.Invalidf("variables.steps", "steps must be 0..%d and crash_after_step 0..steps", maxSteps)
	case v.StepPadBytes < 0 || v.StepPadBytes > maxStepPadBytes || (v.StepPadBytes > 0 && v.StepPad == ""):
		return sortie.Invalidf("variables.step_pad_bytes", "%d outside 0..%d, or without step_pad", v.StepPadBytes, maxStepPadBytes)
	case v.SecretPadBytes != nil && (*v.SecretPadBytes < 0 || *v.SecretPadBytes > maxStepPadBytes || (*v.SecretPadBytes > 0 && v.StepPad == "")):
		return sortie.Invalidf("variables.secret_step_pad_bytes", "%d outside 0..%d, or without step_pad", *v.SecretPadBytes, maxStepPadBytes)
	}
	return nil
}

// act applies crash, panic, fail, interrupt, sleep and until_cancelled in
// that order; done reports that one of them decided the outcome.
func (v *Variables) act(ctx context.Context, call *functions.Call) (out any, done bool, err error) {
	attempt := call.Attempt()
	switch {
	case attempt <= v.CrashAttempts && v.CrashAfterStep == 0:
		call.Logger().Warn("probe: simulating a crash", "exit_code", CrashExitCode)
		if err := call.Flush(); err != nil {
			return nil, true, err
		}
		Exit(CrashExitCode)
		return nil, true, fmt.Errorf("probe: simulated crash on attempt %d (the exit hook returned)", attempt)
	case v.Panic:
		panic("probe: panic requested")
	case v.Fail != "" && (v.FailAttempts == 0 || attempt <= v.FailAttempts):
		if v.Retryable {
			return nil, true, errors.New(v.Fail)
		}
		return nil, true, functions.Permanent(errors.New(v.Fail))
	case v.Interrupt != "":
		return interrupt(call, v.Interrupt, v.Output)
	case v.SleepMs > 0:
		if err := sleep(ctx, time.Duration(v.SleepMs)*time.Millisecond); err != nil {
			return nil, true, err
		}
	}
	if v.UntilCancelled {
		return nil, true, ticks(ctx, call, v.IntervalMs)
	}
	return nil, false, nil
}

// runSteps runs the durable steps "step-1" .. "step-N"; each emits a
// probe.step event when it runs. On attempts ≤ crash_attempts it crashes
// after step crash_after_step.
func (v *Variables) runSteps(ctx context.Context, call *functions.Call) ([]StepResult, error) {
	var out []StepResult
	pad := v.pad(v.StepPadBytes)
	secretPad := pad
	if v.SecretPadBytes != nil {
		secretPad = v.pad(*v.SecretPadBytes)
	}
	for i := 1; i <= v.Steps; i++ {
		pad := pad
		if i <= v.SecretSteps {
			pad = secretPad
		}
		r, err := functions.Step(ctx, call, fmt.Sprintf("step-%d", i), func(ctx context.Context) (StepResult, error) {
			if err := call.Emit(EventStepRan, fmt.Sprintf("step-%d ran", i), map[string]int{"step": i}); err != nil {
				return StepResult{}, err
			}
			return StepResult{Step: i, Attempt: call.Attempt(), Pad: pad}, nil
		}, &functions.StepOptions{Secret: i <= v.SecretSteps})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		if i == v.CrashAfterStep && call.Attempt() <= v.CrashAttempts {
			if err := call.Flush(); err != nil {
				return nil, err
			}
			call.Logger().Warn("probe: simulating a crash after a step", "step", i, "exit_code", CrashExitCode)
			Exit(CrashExitCode)
			return nil, fmt.Errorf("probe: simulated crash after step %d (the exit hook returned)", i)
		}
	}
	return out, nil
}

// pad is step_pad repeated to n bytes; empty for 0.
func (v *Variables) pad(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat(v.StepPad, n/len(v.StepPad)+1)[:n]
}

func interrupt(call *functions.Call, state sortie.State, output json.RawMessage) (any, bool, error) {
	r := call.Resume()
	if r == nil {
		var checkpoint any = map[string]int{"step": 1}
		if len(output) > 0 {
			checkpoint = output
		}
		return nil, true, functions.Interrupt(state, "need input", checkpoint)
	}
	return map[string]json.RawMessage{"resumed_with": orNull(r.Input), "checkpoint": orNull(r.Checkpoint)}, true, nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// emitEvents emits n "progress" events with text "event I of N", or text
// when set.
func emitEvents(ctx context.Context, call *functions.Call, n int, intervalMs int64, text string) error {
	for i := 1; i <= n; i++ {
		if i > 1 {
			if err := sleep(ctx, time.Duration(intervalMs)*time.Millisecond); err != nil {
				return err
			}
		}
		t := text
		if t == "" {
			t = fmt.Sprintf("event %d of %d", i, n)
		}
		if err := call.Emit("progress", t, map[string]int{"i": i}); err != nil {
			return err
		}
	}
	return nil
}

// ticks emits "tick" events every interval (at least 10 ms) until ctx ends.
func ticks(ctx context.Context, call *functions.Call, intervalMs int64) error {
	every := max(10*time.Millisecond, time.Duration(intervalMs)*time.Millisecond)
	for i := 1; ; i++ {
		if err := call.Emit("tick", fmt.Sprintf("tick %d", i), nil); err != nil {
			return err
		}
		if err := sleep(ctx, every); err != nil {
			return err
		}
	}
}

// sleep waits for d or ctx, returning ctx's error if it ended first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
