package a2a_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/pricing"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
)

func TestCardListsTheAgentsAsSkills(t *testing.T) {
	r := newRig(t, nil, nil)
	var card a2a.AgentCard
	getJSON(t, r.srv.URL+a2aserver.CardPath, &card)
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
	}
	if d := cmp.Diff([]string{"probe", "probe2"}, ids); d != "" {
		t.Errorf("card skills (-want +got):\n%s", d)
	}
	if !card.Capabilities.Streaming || !card.Capabilities.PushNotifications {
		t.Errorf("card capabilities %+v, want streaming and push notifications", card.Capabilities)
	}
	if len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0].URL != r.srv.URL+a2aserver.JSONRPCPath ||
		card.SupportedInterfaces[1].URL != r.srv.URL+a2aserver.RESTPath {
		t.Errorf("card interfaces %+v, want JSON-RPC at %s and REST at %s", card.SupportedInterfaces, a2aserver.JSONRPCPath, a2aserver.RESTPath)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Capabilities.Extensions[0].URI != a2aserver.ResumeExtensionURI {
		t.Errorf("card extensions %+v, want the resume extension", card.Capabilities.Extensions)
	}
}

func TestSendMessageRunsTheSkillOncePerMessageID(t *testing.T) {
	r := newRig(t, nil, nil)
	m := msg(t, `{"events":1,"output":{"x":1}}`, "probe")
	task := send(t, r, m, false)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage task state %s, want completed", task.Status.State)
	}
	jsonEq(t, "result artifact", resultOf(t, task), `{"x":1}`)
	if task.ContextID == "" || task.Metadata[a2aserver.MetaAgent] != "probe" {
		t.Errorf("task context %q metadata %v, want a context and agent probe", task.ContextID, task.Metadata)
	}
	again := send(t, r, m, false)
	if again.ID != task.ID {
		t.Errorf("SendMessage with the same message ID gave task %s, then %s; want one task", task.ID, again.ID)
	}
	page, err := r.host.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 {
		t.Errorf("runs after two sends of one message: %v, %v; want 1", page, err)
	}
}

func TestTheSkillComesFromMetadataOrTheDefault(t *testing.T) {
	r := newRig(t, nil, nil)
	_, err := r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "")})
	wantInvalid(t, "SendMessage(no skill, two agents)", err, "message.metadata.skill")
	_, err = r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "nope")})
	wantInvalid(t, "SendMessage(unknown skill)", err, "message.metadata.skill")

	d := newRig(t, &a2aserver.Options{DefaultAgent: "probe2"}, nil)
	task := send(t, d, msg(t, `{"events":0}`, ""), false)
	if task.Metadata[a2aserver.MetaAgent] != "probe2" {
		t.Errorf("task of a message without skill runs %v, want the default probe2", task.Metadata[a2aserver.MetaAgent])
	}
}

func TestTextPartsBecomeTheTextVariable(t *testing.T) {
	r := newRig(t, &a2aserver.Options{DefaultAgent: "probe"}, nil)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"), a2a.NewTextPart("world"), a2a.NewDataPart(map[string]any{"events": 0}))
	task := send(t, r, m, false)
	run, err := r.host.Engine.Get(testCtx(t), sortie.RunID(task.ID))
	if err != nil {
		t.Fatalf("Get(%s) = %v", task.ID, err)
	}
	jsonEq(t, "run variables", string(run.Variables), `{"events":0,"text":"hello\nworld"}`)
	if len(task.History) == 0 || task.History[0].ID != m.ID || task.History[0].Parts[0].Text() != "hello\nworld" {
		t.Errorf("task history %+v, want the message (ID %s) with its text first", task.History, m.ID)
	}
}

func TestBadMessagesAreRefusedNamingTheField(t *testing.T) {
	r := newRig(t, &a2aserver.Options{DefaultAgent: "probe"}, nil)
	file := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewFileURLPart("https://example.com/f.txt", "text/plain"))
	list := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart([]any{1, 2}))
	two := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{}), a2a.NewDataPart(map[string]any{}))
	agent := msg(t, `{}`, "")
	agent.Role = a2a.MessageRoleAgent
	noID := msg(t, `{}`, "")
	noID.ID = ""
	clash := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"), a2a.NewDataPart(map[string]any{"text": "y"}))
	huge := msg(t, `{}`, "")
	huge.Parts = append(huge.Parts[:0], a2a.NewDataPart(map[string]any{"blob": strings.Repeat("a", 300<<10)}))
	cases := []struct {
		name  string
		m     *a2a.Message
		field string
	}{
		{"file part", file, "message.parts[0]"},
		{"data not an object", list, "message.parts[0].data"},
		{"two data parts", two, "message.parts[1]"},
		{"agent role", agent, "message.role"},
		{"no message ID", noID, "message.messageId"},
		{"text twice", clash, "message.parts"},
		{"variables over the limit", huge, "message.parts"},
	}
	for _, c := range cases {
		_, err := r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: c.m})
		wantInvalid(t, "SendMessage("+c.name+")", err, c.field)
	}
	page, err := r.host.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Errorf("runs after refused messages: %d, %v; want none", len(page.Runs), err)
	}
}

func TestAnOversizeBodyIsRefusedBeforeItIsRead(t *testing.T) {
	r := newRig(t, &a2aserver.Options{DefaultAgent: "probe", MaxBodyBytes: 4096}, nil)
	m := msg(t, `{}`, "")
	m.Parts = a2a.ContentParts{a2a.NewTextPart(strings.Repeat("a", 8192))}
	_, err := r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: m})
	if !errors.Is(err, a2a.ErrInvalidRequest) || !strings.Contains(err.Error(), "limit 4096") {
		t.Errorf("SendMessage(8 KiB body, limit 4 KiB) = %v, want invalid request naming the limit", err)
	}
	page, err := r.host.Engine.List(testCtx(t), sortie.ListQuery{})
	if err != nil || len(page.Runs) != 0 {
		t.Errorf("runs after an oversize body: %d, %v; want none", len(page.Runs), err)
	}
}

// A host that prices runs shows the cost in the task's metadata and in
// the final status update's, as the HTTP API shows it.
func TestTaskMetadataCarriesTheCost(t *testing.T) {
	prices, err := pricing.Default().Set("local.second", "1") // $1 a second: the cost is the duration in ms × 10⁶ n$
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil, &remotetest.Options{Pricer: prices})
	task := send(t, r, msg(t, `{"sleep_ms":5,"output":1}`, "probe"), false)
	run, err := r.host.Engine.Get(testCtx(t), sortie.RunID(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"total_nano_usd": float64(run.Cost.TotalNanoUSD), "price_version": "2026-12-02+set",
		"components": map[string]any{"compute": float64(run.Cost.Components["compute"])}}
	got, _ := json.Marshal(task.Metadata[a2aserver.MetaCost])
	var gotMap map[string]any
	_ = json.Unmarshal(got, &gotMap)
	if d := cmp.Diff(want, gotMap); d != "" || run.Cost.TotalNanoUSD <= 0 {
		t.Errorf("task metadata %s (-want +got):\n%s (the run cost %d n$, want > 0)", a2aserver.MetaCost, d, run.Cost.TotalNanoUSD)
	}
}
