package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/inputschema"
	"github.com/sortie-run/sortie/launchers/local"
)

// schemaAgent is the probe declaring its input schema.
var schemaAgent = sortie.Manifest{Name: "probe", Version: "1", Runtime: "go:probe", InputSchema: probe.InputSchema,
	Policy: sortie.Policy{HeartbeatMs: 100, LeaseMs: 400, BackoffMs: 1, StartTimeoutMs: 300}}

// newInputRig is an engine over the memory control plane checking input
// schemas, whose in-process launcher runs the probe.
func newInputRig(t *testing.T, agents sortie.Agents) (*sortie.Engine, *memory.ControlPlane) {
	t.Helper()
	reg := functions.NewRegistry()
	probe.Register(reg)
	w := &functions.Worker{Registry: reg}
	cp := memory.New()
	l, err := local.New(&local.Options{InProcess: func(ctx context.Context, inv *sortie.Invocation) error {
		_, err := w.Execute(ctx, inv, functions.NewControlPlaneReporter(cp, inv, "test"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := sortie.NewEngine(cp, l, agents, &sortie.EngineOptions{Inputs: &inputschema.Checker{}, DefaultPolicy: sortie.Policy{MaxAttempts: 5}})
	t.Cleanup(func() { e.Close(); l.Close(); cp.Close() })
	return e, cp
}

// A variable of the wrong type, out of range or missing is refused at
// submit naming its field, and nothing is stored; valid variables run.
func TestSubmitChecksInputSchema(t *testing.T) {
	required := schemaAgent
	required.Name = "needs-name"
	required.InputSchema = json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"items":{"type":"array","items":{"type":"integer"}}}}`)
	e, cp := newInputRig(t, sortie.Agents{"probe": schemaAgent, "needs-name": required})
	ctx := t.Context()
	for _, tc := range []struct{ agent, vars, field, reason string }{
		{"probe", `{"events":"3"}`, "variables.events", "want integer"},
		{"probe", `{"events":10001}`, "variables.events", "maximum"},
		{"probe", `{"interrupt":"now"}`, "variables.interrupt", "input-required"},
		{"needs-name", `{}`, "variables.name", "missing"},
		{"needs-name", ``, "variables.name", "missing"},
		{"needs-name", `{"name":"x","items":[1,"2"]}`, "variables.items[1]", "want integer"},
	} {
		_, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: tc.agent, Variables: json.RawMessage(tc.vars), IdempotencyKey: "k-" + tc.field})
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Reason, tc.reason) {
			t.Errorf("Submit(%s, %s) = %v; want a ValidationError for %s saying %q", tc.agent, tc.vars, err, tc.field, tc.reason)
		}
	}
	if page, _ := cp.List(ctx, sortie.ListQuery{}); len(page.Runs) != 0 {
		t.Fatalf("refused submissions stored %d runs", len(page.Runs))
	}
	run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "probe", Variables: json.RawMessage(`{"events":2,"output":{"ok":true}}`)})
	if err != nil {
		t.Fatalf("Submit(valid variables) = %v", err)
	}
	if len(run.Agent.InputSchema) != 0 {
		t.Errorf("the run's manifest keeps its input schema (%d bytes); want it dropped", len(run.Agent.InputSchema))
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done, err := sortie.NewClient(e, &sortie.ClientOptions{PollInterval: 10 * time.Millisecond}).Wait(wctx, run.ID)
	if err != nil || done.State != sortie.StateCompleted || string(done.Result) != `{"ok":true}` {
		t.Fatalf("run with valid variables = %+v, %v; want completed with {\"ok\":true}", done, err)
	}
}

// A manifest's input schema must be a JSON object within the limit, and
// one that does not compile is refused by the checker; each names
// agent.input_schema.
func TestManifestInputSchemaRefused(t *testing.T) {
	for name, schema := range map[string]string{
		"not an object":   `[1]`,
		"not JSON":        `{"type":`,
		"over the limit":  `{"description":"` + strings.Repeat("x", sortie.MaxInputSchemaBytes) + `"}`,
		"bad type":        `{"type":"integr"}`,
		"remote $ref":     `{"$ref":"https://example.com/schema.json"}`,
		"file $ref":       `{"$ref":"file:///etc/passwd"}`,
		"bad minimum":     `{"properties":{"n":{"minimum":"one"}}}`,
		"bad regex":       `{"pattern":"(?<x"}`,
		"dangling $defs":  `{"$ref":"#/$defs/missing"}`,
		"wrong $schema":   `{"$schema":"https://example.com/not-a-metaschema"}`,
		"items not array": `{"required":"name"}`,
	} {
		m := schemaAgent
		m.InputSchema = json.RawMessage(schema)
		var ve *sortie.ValidationError
		if err := (&inputschema.Checker{}).Check(&m); !errors.As(err, &ve) || ve.Field != "agent.input_schema" {
			t.Errorf("%s: Check(%.40s) = %v; want a ValidationError naming agent.input_schema", name, schema, err)
		}
	}
}

// ListAgents and DescribeAgent show the catalog's manifests with the
// policy a run gets without overrides, and the input schema.
func TestEngineDescribesAgents(t *testing.T) {
	e, _ := newInputRig(t, sortie.Agents{"probe": schemaAgent, "plain": {Name: "plain", Runtime: "go:probe"}})
	agents, err := e.ListAgents(t.Context())
	if err != nil || len(agents) != 2 || agents[0].Name != "plain" || agents[1].Name != "probe" {
		t.Fatalf("ListAgents = %+v, %v; want plain, probe", agents, err)
	}
	m, err := e.DescribeAgent(t.Context(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	want := sortie.Policy{MaxAttempts: 5, HeartbeatMs: 100, LeaseMs: 400, BackoffMs: 1, StartTimeoutMs: 300,
		AttemptTimeoutMs: 900000, BackoffMaxMs: 60000, CancelTimeoutMs: sortie.DefaultCancelTimeoutMs}
	if m.Policy != want || string(m.InputSchema) != string(probe.InputSchema) {
		t.Errorf("DescribeAgent(probe) = policy %+v, schema %d bytes; want %+v and the probe's schema", m.Policy, len(m.InputSchema), want)
	}
	if _, err := e.DescribeAgent(t.Context(), "nope"); !errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("DescribeAgent(nope) = %v, want ErrNotFound", err)
	}
	var ve *sortie.ValidationError
	if _, err := e.DescribeAgent(t.Context(), "../x"); !errors.As(err, &ve) || ve.Field != "agent" {
		t.Errorf("DescribeAgent(../x) = %v, want a ValidationError naming agent", err)
	}
}
