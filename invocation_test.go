package sortie

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func validInvocation() *Invocation {
	return &Invocation{
		Version: InvocationVersion, RunID: NewRunID(time.Now()), Attempt: 1, LaunchID: NewLaunchID(),
		Agent:      Manifest{Name: "textstats", Version: "1.0.0", Runtime: "go:textstats"},
		Variables:  json.RawMessage(`{"document":"opticks"}`),
		DeadlineMs: time.Now().Add(time.Minute).UnixMilli(), HeartbeatMs: 5000, LeaseMs: 15000,
		Report: Report{Mode: ReportControlPlane},
	}
}

func TestInvocationRoundTrip(t *testing.T) {
	inv := validInvocation()
	b, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeInvocation(b)
	if err != nil {
		t.Fatalf("DecodeInvocation(valid) = %v", err)
	}
	if got.RunID != inv.RunID || got.LaunchID != inv.LaunchID || string(got.Variables) != string(inv.Variables) {
		t.Fatalf("DecodeInvocation round trip = %+v, want %+v", got, inv)
	}
}

func TestInvocationValidate(t *testing.T) {
	for _, tc := range []struct {
		field  string
		mutate func(*Invocation)
	}{
		{"version", func(i *Invocation) { i.Version = "sortie.invocation/v2" }},
		{"run_id", func(i *Invocation) { i.RunID = "../../etc/passwd" }},
		{"attempt", func(i *Invocation) { i.Attempt = 0 }},
		{"launch_id", func(i *Invocation) { i.LaunchID = "a b" }},
		{"agent.name", func(i *Invocation) { i.Agent.Name = "Bad Name" }},
		{"agent.runtime", func(i *Invocation) { i.Agent.Runtime = "exec:/bin/sh" }},
		{"agent.runtime", func(i *Invocation) { i.Agent.Runtime = "python:x" }},
		{"variables", func(i *Invocation) { i.Variables = json.RawMessage(`[1,2]`) }},
		{"variables", func(i *Invocation) {
			i.Variables = json.RawMessage(`{"x":"` + strings.Repeat("y", MaxVariablesBytes) + `"}`)
		}},
		{"config_refs", func(i *Invocation) { i.ConfigRefs = []string{"/etc/secret"} }},
		{"deadline_ms", func(i *Invocation) { i.DeadlineMs = 0 }},
		{"heartbeat_ms", func(i *Invocation) { i.LeaseMs = 100 }},
		{"report.mode", func(i *Invocation) { i.Report.Mode = "carrier-pigeon" }},
		{"traceparent", func(i *Invocation) { i.TraceParent = "00-" + strings.Repeat("a", MaxTraceParentBytes) }},
		{"tracestate", func(i *Invocation) { i.TraceState = "k=" + strings.Repeat("v", MaxTraceStateBytes) }},
		{"report.callback_url", func(i *Invocation) { i.Report = Report{Mode: ReportCallback, CallbackURL: "file:///tmp/x", Token: "t"} }},
		{"resume.input_ref", func(i *Invocation) {
			i.Resume = &Resume{Input: json.RawMessage(`1`), InputRef: testRef(i.RunID, "resume-input-2-a")}
		}},
		{"resume.input_ref.key", func(i *Invocation) {
			i.Resume = &Resume{InputRef: &PayloadRef{Store: "s", Key: "x", SHA256: strings.Repeat("a", 64)}}
		}},
		{"resume.checkpoint_ref", func(i *Invocation) {
			i.Resume = &Resume{Checkpoint: json.RawMessage(`1`), CheckpointRef: testRef(i.RunID, "checkpoint-1")}
		}},
		{"resume.checkpoint_ref.sha256", func(i *Invocation) {
			ref := testRef(i.RunID, "checkpoint-1")
			ref.SHA256 = "X"
			i.Resume = &Resume{CheckpointRef: ref}
		}},
	} {
		inv := validInvocation()
		tc.mutate(inv)
		var ve *ValidationError
		if err := inv.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Validate() with bad %s = %v, want a ValidationError on %q", tc.field, err, tc.field)
		}
	}
}

func TestDecodeInvocationRefusesUnknownFieldsAndSize(t *testing.T) {
	if _, err := DecodeInvocation([]byte(`{"version":"sortie.invocation/v1","command":"/bin/sh"}`)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("DecodeInvocation(unknown field) = %v, want ErrInvalidArgument", err)
	}
	valid, err := json.Marshal(validInvocation())
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"}", "]", " {}", "x"} {
		if _, err := DecodeInvocation(append(valid, tail...)); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "data after the JSON value") {
			t.Errorf("DecodeInvocation(invocation + %q) = %v, want ErrInvalidArgument naming the data after it", tail, err)
		}
	}
	big := make([]byte, MaxInvocationBytes+1)
	if _, err := DecodeInvocation(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("DecodeInvocation(%d bytes) = %v, want an error naming the limit", len(big), err)
	}
}

func TestSubmitRequest(t *testing.T) {
	a := &SubmitRequest{Agent: "textstats", Variables: json.RawMessage(`{"b":1,"a":[1,2]}`), IdempotencyKey: "k1"}
	b := &SubmitRequest{Agent: "textstats", Variables: json.RawMessage(`{ "a": [1, 2], "b": 1 }`), IdempotencyKey: "k2"}
	if a.Hash() != b.Hash() {
		t.Errorf("Hash differs for the same variables in another key order or spacing")
	}
	c := &SubmitRequest{Agent: "textstats", Variables: json.RawMessage(`{"b":2,"a":[1,2]}`)}
	if a.Hash() == c.Hash() {
		t.Errorf("Hash equal for different variables")
	}
	for _, tc := range []struct {
		field string
		req   SubmitRequest
	}{
		{"agent", SubmitRequest{Agent: ""}},
		{"variables", SubmitRequest{Agent: "a", Variables: json.RawMessage(`"str"`)}},
		{"idempotency_key", SubmitRequest{Agent: "a", IdempotencyKey: strings.Repeat("k", 256)}},
		{"labels", SubmitRequest{Agent: "a", Labels: map[string]string{"": "v"}}},
		{"labels", SubmitRequest{Agent: "a", Labels: map[string]string{"a\x00b": "x"}}},
		{"labels", SubmitRequest{Agent: "a", Labels: map[string]string{"team": "ops\x1b]0;owned\x07"}}},
		{"context_id", SubmitRequest{Agent: "a", ContextID: "batch\n7"}},
		{"context_id", SubmitRequest{Agent: "a", ContextID: "a\u0085b"}},
		{"labels", SubmitRequest{Agent: "a", Labels: map[string]string{"k": "\u009b31m"}}},
		{"idempotency_key", SubmitRequest{Agent: "a", IdempotencyKey: "k\x7f"}},
		{"policy.max_attempts", SubmitRequest{Agent: "a", Policy: Policy{MaxAttempts: 1000}}},
		{"policy.heartbeat_ms", SubmitRequest{Agent: "a", Policy: Policy{HeartbeatMs: -1}}},
	} {
		var ve *ValidationError
		if err := tc.req.Validate(); !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("Validate(bad %s) = %v, want a ValidationError on %q", tc.field, err, tc.field)
		}
	}
	ok := SubmitRequest{Agent: "a", ContextID: "../../etc/passwd é", IdempotencyKey: "k 1", Labels: map[string]string{"équipe": "ops / nuit"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(printable context, key and labels) = %v, want nil", err)
	}
}

func TestVariablesMustBeUTF8AndShallow(t *testing.T) {
	nest := func(n int) string { return `{"v":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}` }
	for _, tc := range []struct {
		vars   string
		reason string // "" accepted
	}{
		{"{\"text\":\"\xff\xfe\"}", "not valid UTF-8"},
		{nest(MaxJSONDepth + 1), "nested 257 levels deep, limit 256"},
		{nest(MaxJSONDepth), ""},
		{`{"text":"[[[[ \" {{{{ \\"}`, ""}, // brackets and escapes in strings do not nest
		{`{"text":"caf\u00e9 \ud83d\ude00 naïve"}`, ""},
	} {
		err := (&SubmitRequest{Agent: "a", Variables: json.RawMessage(tc.vars)}).Validate()
		var ve *ValidationError
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("Validate(variables %.40q) = %v, want nil", tc.vars, err)
		case tc.reason != "" && (!errors.As(err, &ve) || ve.Field != "variables" || !strings.Contains(ve.Reason, tc.reason)):
			t.Errorf("Validate(variables %.40q) = %v, want a ValidationError on variables saying %q", tc.vars, err, tc.reason)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := Policy{HeartbeatMs: 200}.WithDefaults()
	if p.LeaseMs != 600 || p.MaxAttempts != 3 || p.BackoffMs != 1000 {
		t.Errorf("Policy{HeartbeatMs:200}.WithDefaults() = %+v, want lease 600, 3 attempts, backoff 1000", p)
	}
	m := Policy{MaxAttempts: 5}.Merge(Policy{MaxAttempts: 2, BackoffMs: 7})
	if m.MaxAttempts != 5 || m.BackoffMs != 7 {
		t.Errorf("Merge = %+v, want max attempts 5 (own) and backoff 7 (default)", m)
	}
}

// testRef is a valid reference to object name of run.
func testRef(run RunID, name string) *PayloadRef {
	return &PayloadRef{Store: "file", Key: "runs/" + string(run) + "/" + name, Size: 1, SHA256: strings.Repeat("ab", 32)}
}

// A resumed attempt's input and checkpoint by reference are a valid
// invocation; an interrupt with a checkpoint reference is a valid
// outcome, and one with both or a bad reference is refused naming the
// field.
func TestResumeRefsValid(t *testing.T) {
	inv := validInvocation()
	inv.Resume = &Resume{InputRef: testRef(inv.RunID, "resume-input-2-a"), CheckpointRef: testRef(inv.RunID, "checkpoint-1")}
	if err := inv.Validate(); err != nil {
		t.Fatalf("Validate(resume by reference) = %v", err)
	}
	in := &Interrupt{State: StateInputRequired, CheckpointRef: testRef(inv.RunID, "checkpoint-1")}
	if err := (&Outcome{Interrupt: in}).Validate(); err != nil {
		t.Fatalf("Validate(interrupt by reference) = %v", err)
	}
	for field, bad := range map[string]*Interrupt{
		"interrupt":                     {State: StateInputRequired, Checkpoint: json.RawMessage(`1`), CheckpointRef: in.CheckpointRef},
		"interrupt.checkpoint_ref.size": {State: StateInputRequired, CheckpointRef: &PayloadRef{Store: "f", Key: in.CheckpointRef.Key, Size: -1, SHA256: in.CheckpointRef.SHA256}},
	} {
		var ve *ValidationError
		if err := bad.Validate(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("Validate(%s) = %v, want a ValidationError on %s", field, err, field)
		}
	}
}

// TestDuplicateKeysRefused: a key twice in one object, at any depth, is
// refused in stored JSON, naming the field and the key (clipped).
func TestDuplicateKeysRefused(t *testing.T) {
	long := strings.Repeat("k", 5000)
	for _, tc := range []struct{ vars, field, key string }{
		{`{"top":"many","top":5}`, "variables", `"top"`},
		{`{"a":[{"b":{"c":1,"\u0063":2}}]}`, "variables.a[0].b", `"c"`},
		{`{"` + long + `":1,"` + long + `":2}`, "variables", `"` + long[:80] + `" at`},
	} {
		err := (&SubmitRequest{Agent: "a", Variables: json.RawMessage(tc.vars)}).Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Reason, "duplicate object key "+tc.key) || len(ve.Reason) > 200 {
			t.Errorf("Validate(variables %.40q) = %.300v, want a ValidationError on %s naming key %.90s", tc.vars, err, tc.field, tc.key)
		}
	}
	if _, err := DecodeMessage([]byte(`{"event":{"kind":"k","data":{"i":1,"i":2}}}`)); err == nil || !strings.Contains(err.Error(), `duplicate object key "i"`) {
		t.Errorf("DecodeMessage(event data with i twice) = %v, want a duplicate key error", err)
	}
}
