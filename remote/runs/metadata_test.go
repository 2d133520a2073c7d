package runs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
)

func TestMetadataShowsOnTheRemoteRun(t *testing.T) {
	tr, h := newTransport(t)
	req := call(`{"events":0}`)
	req.Metadata = map[string]any{"trace": "t-1", "attempt_budget": 3, "tags": []string{"a", "b"}}
	res, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send with metadata = %v", err)
	}
	run, err := h.Engine.Get(testCtx(t), sortie.RunID(res.TaskID))
	if err != nil {
		t.Fatalf("Get(%s) = %v", res.TaskID, err)
	}
	want := map[string]string{"trace": "t-1", "attempt_budget": "3", "tags": `["a","b"]`}
	if d := cmp.Diff(want, run.Labels); d != "" {
		t.Errorf("remote run's labels (-want +got):\n%s", d)
	}
	snap, err := tr.GetTask(testCtx(t), hostURL, res.TaskID, 0)
	if err != nil {
		t.Fatalf("GetTask = %v", err)
	}
	if d := cmp.Diff(want, snap.Meta[runs.MetaLabels]); d != "" {
		t.Errorf("task snapshot Meta[%q] (-want +got):\n%s", runs.MetaLabels, d)
	}
}

func TestMetadataBeyondTheLabelLimitsIsRefused(t *testing.T) {
	tr, h := newTransport(t)
	many := map[string]any{}
	for i := range sortie.MaxLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for name, c := range map[string]struct {
		md    map[string]any
		field string
	}{
		"too many keys": {many, "metadata"},
		"long key":      {map[string]any{strings.Repeat("k", 64): "v"}, "metadata"},
		"long value":    {map[string]any{"k": strings.Repeat("v", 256)}, "metadata.k"},
	} {
		req := call(`{"events":0}`)
		req.Metadata = c.md
		_, err := tr.Send(testCtx(t), req)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: Send = %v, want a ValidationError for %q", name, err, c.field)
		}
	}
	if page, err := h.Engine.List(testCtx(t), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Errorf("runs after refused calls: %d (%v), want none", len(page.Runs), err)
	}
}

func TestAFollowUpCannotChangeTheMetadata(t *testing.T) {
	tr, _ := newTransport(t)
	req := call(`{"events":0,"interrupt":"input-required"}`)
	req.Metadata = map[string]any{"trace": "t-1"}
	_, err := tr.Send(testCtx(t), req)
	var ire *remote.InputRequiredError
	if !errors.As(err, &ire) {
		t.Fatalf("Send(interrupting) = %v, want *InputRequiredError", err)
	}
	follow := &remote.CallRequest{AgentURL: hostURL, TaskID: ire.Task.TaskID, Metadata: map[string]any{"trace": "t-2"}}
	var ve *sortie.ValidationError
	if _, err := tr.Send(testCtx(t), follow); !errors.As(err, &ve) || ve.Field != "metadata" {
		t.Errorf("follow-up with other metadata = %v, want a ValidationError for metadata", err)
	}
	follow.Metadata = map[string]any{"trace": "t-1"}
	follow.Message.Data = json.RawMessage(`{"answer":1}`)
	if _, err := tr.Send(testCtx(t), follow); err != nil {
		t.Errorf("follow-up repeating the metadata = %v, want the result", err)
	}
}

func TestTaskEventsAndStatusesCarryTheirRawPayload(t *testing.T) {
	tr, _ := newTransport(t)
	res, err := tr.Send(testCtx(t), call(`{"events":2}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	var kinds []string
	for ev, err := range tr.SubscribeTask(testCtx(t), &remote.SubscribeRequest{AgentURL: hostURL, TaskID: res.TaskID, After: "0.0"}) {
		if err != nil {
			t.Fatalf("SubscribeTask = %v", err)
		}
		var raw map[string]any
		if err := json.Unmarshal(ev.Raw, &raw); err != nil {
			t.Fatalf("event %s raw = %q: %v", ev.Kind, ev.Raw, err)
		}
		switch {
		case ev.Cursor != "":
			if raw["kind"] != "progress" || raw["text"] != ev.Text {
				t.Errorf("progress event raw %v, want the stored event (kind progress, text %q)", raw, ev.Text)
			}
		case raw["state"] != "completed":
			t.Errorf("%s event raw %v, want the run's status (completed)", ev.Kind, raw)
		}
		kinds = append(kinds, ev.Kind)
		if ev.Status != nil && len(ev.Status.Raw) == 0 {
			t.Errorf("%s event status has no raw payload", ev.Kind)
		}
	}
	if d := cmp.Diff([]string{remote.KindTask, remote.KindStatus, remote.KindStatus, remote.KindStatus}, kinds); d != "" {
		t.Errorf("subscription kinds (-want +got):\n%s", d)
	}
}

func TestMetadataNamesConfigRefs(t *testing.T) {
	refs, err := functions.LoadConfigRefs(`{"version": "sortie.configrefs/v1", "refs": {"db": {"var": "DB", "env": "DB"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	h := remotetest.New(t, &remotetest.Options{ConfigRefs: refs})
	tr := runs.New(runs.Single(hostURL, h.Engine), nil)
	req := call(`{"events":0}`)
	req.Metadata = map[string]any{sortie.MetaConfigRefs: []any{"db"}, "team": "a"}
	snap, err := tr.SendTask(testCtx(t), req, false)
	if err != nil {
		t.Fatalf("SendTask with config refs = %v", err)
	}
	run, err := h.Engine.Get(testCtx(t), sortie.RunID(snap.TaskID))
	if err != nil || strings.Join(run.ConfigRefs, ",") != "db" || run.Labels["team"] != "a" || len(run.Labels) != 1 {
		t.Errorf("remote run = refs %v labels %v (%v), want refs [db] and the label team only", run.ConfigRefs, run.Labels, err)
	}
	req.Message.ID = ""
	req.Metadata = map[string]any{sortie.MetaConfigRefs: []any{"nope"}}
	var ve *sortie.ValidationError
	if _, err := tr.SendTask(testCtx(t), req, false); !errors.As(err, &ve) || ve.Field != "config_refs" {
		t.Errorf("SendTask naming an unknown reference = %v, want a ValidationError for config_refs", err)
	}
}
