package a2a_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/remote"
	ra2a "github.com/sortie-run/sortie/remote/a2a"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

func TestMetadataShowsOnTheRemoteRun(t *testing.T) {
	url, tr, h := newAgent(t)
	req := call(url, `{"events":0}`)
	req.Metadata = map[string]any{"trace": "t-1", "budget": 3}
	res, err := tr.Send(testCtx(t), req)
	if err != nil {
		t.Fatalf("Send with metadata = %v", err)
	}
	run, err := h.Engine.Get(testCtx(t), sortie.RunID(res.TaskID))
	if err != nil {
		t.Fatalf("Get(%s) = %v", res.TaskID, err)
	}
	want := map[string]string{"trace": "t-1", "budget": "3"}
	if d := cmp.Diff(want, run.Labels); d != "" {
		t.Errorf("remote run's labels (-want +got):\n%s", d)
	}
	snap, err := tr.GetTask(testCtx(t), url, res.TaskID, 0)
	if err != nil {
		t.Fatalf("GetTask = %v", err)
	}
	if d := cmp.Diff(map[string]any{"trace": "t-1", "budget": "3"}, snap.Meta[a2aserver.MetaLabels]); d != "" {
		t.Errorf("task Meta[%q] (-want +got):\n%s", a2aserver.MetaLabels, d)
	}
	req = call(url, `{"events":0}`)
	req.Metadata = map[string]any{"big": strings.Repeat("x", 300)}
	if _, err := tr.Send(testCtx(t), req); err == nil || !strings.Contains(err.Error(), "message.metadata.big") {
		t.Errorf("Send with a 300-byte metadata value = %v, want invalid params naming message.metadata.big", err)
	}
}

func TestTaskEventsCarryTheA2AEvent(t *testing.T) {
	url, tr, _ := newAgent(t)
	res, err := tr.Send(testCtx(t), call(url, `{"events":2}`))
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	var wrappers []string
	for ev, err := range tr.SubscribeTask(testCtx(t), &remote.SubscribeRequest{AgentURL: url, TaskID: res.TaskID, After: "0.0"}) {
		if err != nil {
			t.Fatalf("SubscribeTask = %v", err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(ev.Raw, &raw); err != nil || len(raw) != 1 {
			t.Fatalf("%s event raw = %q (%v), want an A2A StreamResponse with one member", ev.Kind, ev.Raw, err)
		}
		for k := range raw {
			wrappers = append(wrappers, k)
		}
		if ev.Done {
			break
		}
	}
	if len(wrappers) < 3 || wrappers[0] != "task" || wrappers[1] != "statusUpdate" {
		t.Errorf("raw payload members %v, want task, then statusUpdate for each event", wrappers)
	}
}

// Message metadata key MetaConfigRefs names the run's configuration
// references on a Sortie host: they are checked at submit and kept on the
// run (not as labels).
func TestMetadataNamesConfigRefs(t *testing.T) {
	refs, err := functions.LoadConfigRefs(`{"version": "sortie.configrefs/v1", "refs": {"db": {"var": "DB", "env": "DB"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	url, tr, h := newAgentWith(t, &remotetest.Options{ConfigRefs: refs})
	req := call(url, `{"events":0}`)
	req.Metadata = map[string]any{ra2a.MetaConfigRefs: []string{"db"}}
	snap, err := tr.SendTask(testCtx(t), req, false)
	if err != nil {
		t.Fatalf("SendTask with config refs = %v", err)
	}
	run, err := h.Engine.Get(testCtx(t), sortie.RunID(snap.TaskID))
	if err != nil || strings.Join(run.ConfigRefs, ",") != "db" || len(run.Labels) != 0 {
		t.Errorf("remote run = refs %v labels %v (%v), want refs [db] and no labels", run.ConfigRefs, run.Labels, err)
	}
	req = call(url, `{"events":0}`)
	req.Metadata = map[string]any{ra2a.MetaConfigRefs: []string{"nope"}}
	if _, err := tr.SendTask(testCtx(t), req, false); err == nil || !strings.Contains(err.Error(), "config_refs") {
		t.Errorf("SendTask naming an unknown reference = %v, want invalid params naming config_refs", err)
	}
}
