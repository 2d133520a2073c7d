package a2a_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/push"
)

// An a2a-go client sets push configurations with tokens on a task (one
// with the first message, one on the paused task), and the host also has
// a run-payload configuration on it. The task pauses for input and then
// completes after a follow-up. Each A2A receiver gets the task, decoded
// with a2a-go's types, exactly as GetTask returns it in each state, with
// its own token in the token headers and a valid signature; the
// run-payload receiver gets the run payload without a token. Neither the
// stored configurations (read from the control plane, and the SQLite
// files) nor the logs hold a plaintext token, and the client never gets
// one back.
func TestA2APushDeliveriesCarryTheTaskAndTheToken(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	tokens := map[string]string{"/first": "tok-s3cret-first-0123", "/later": "tok-s3cret-later-4567"}
	ph := newPushHost(t, secret)
	rc := newReceiver(t, secret)
	ctx := testCtx(t)
	res, err := ph.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg(t, `{"events":1,"interrupt":"input-required"}`, "probe"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{ID: "first", URL: rc.srv.URL + "/first", Token: tokens["/first"]}}})
	if err != nil {
		t.Fatalf("SendMessage(with a push configuration with a token) = %v", err)
	}
	task := res.(*a2a.Task)
	created, err := ph.client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "later", URL: rc.srv.URL + "/later", Token: tokens["/later"]})
	if err != nil || created.Token != "" || created.ID != "later" {
		t.Fatalf("CreateTaskPushConfig(with a token) = %+v, %v; want config later without the token", created, err)
	}
	ps := ph.host.CP.(sortie.PushStore)
	run := sortie.RunID(task.ID)
	if _, err := ps.PutPushConfig(ctx, &sortie.PushConfig{RunID: run, ID: "run-payload", URL: rc.srv.URL + "/run"}, 1); err != nil {
		t.Fatalf("PutPushConfig(run payload) = %v", err)
	}
	ph.d.Notify(run)

	for _, path := range []string{"/first", "/later"} {
		paused := waitState(t, rc, path, a2a.TaskStateInputRequired)
		sameAsGetTask(t, ph.rig, "the input-required delivery to "+path, paused)
	}
	waitRunState(t, rc, "/run", sortie.StateInputRequired)
	follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"answer": 42}))
	if done := send(t, ph.rig, follow, false); done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("follow-up gave the task in %s, want completed", done.Status.State)
	}
	for _, path := range []string{"/first", "/later"} {
		sameAsGetTask(t, ph.rig, "the completed delivery to "+path, waitState(t, rc, path, a2a.TaskStateCompleted))
		checkA2ADeliveries(t, rc.at(path), path, tokens[path])
	}
	waitRunState(t, rc, "/run", sortie.StateCompleted)
	for i, d := range rc.at("/run") {
		if d.verify != nil || d.header.Get(push.TokenHeader) != "" || d.header.Get(push.TokenHeaderPrefixed) != "" {
			t.Errorf("run-payload delivery %d: verify %v, token headers %q %q; want signed, no token", i+1, d.verify,
				d.header.Get(push.TokenHeader), d.header.Get(push.TokenHeaderPrefixed))
		}
	}
	noPlaintextToken(t, ph, run, tokens)
}

// sameAsGetTask fails t unless delivered is the task GetTask returns now.
func sameAsGetTask(t *testing.T, r *rig, what string, delivered *a2a.Task) {
	t.Helper()
	got, err := r.client.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: delivered.ID})
	if err != nil {
		t.Fatalf("GetTask(%s) = %v", delivered.ID, err)
	}
	want, _ := json.Marshal(got)
	have, _ := json.Marshal(delivered)
	jsonEq(t, what+" against GetTask", string(have), string(want))
}

// checkA2ADeliveries checks every delivery to one A2A configuration:
// signed, carrying token in both token headers, an A2A task whose states
// follow the run's order and end with the one completed delivery.
func checkA2ADeliveries(t *testing.T, ds []delivery, path, token string) {
	t.Helper()
	order := map[a2a.TaskState]int{a2a.TaskStateSubmitted: 0, a2a.TaskStateWorking: 1, a2a.TaskStateInputRequired: 2, a2a.TaskStateCompleted: 4}
	last, seenPause := -1, false
	var states []a2a.TaskState
	defer func() { t.Logf("deliveries to %s: %v", path, states) }()
	for i, d := range ds {
		if d.verify != nil {
			t.Errorf("delivery %d to %s: signature check = %v, want valid", i+1, path, d.verify)
		}
		if got, prefixed := d.header.Get(push.TokenHeader), d.header.Get(push.TokenHeaderPrefixed); got != token || prefixed != token {
			t.Errorf("delivery %d to %s: %s %q, %s %q; want the configuration's token in both", i+1, path, push.TokenHeader, got, push.TokenHeaderPrefixed, prefixed)
		}
		s := decodeTask(t, d.body).Status.State
		states = append(states, s)
		n, ok := order[s]
		if s == a2a.TaskStateWorking && seenPause {
			n = 3 // the resumed attempt
		}
		if !ok || n < last || (n == last && s == a2a.TaskStateCompleted) {
			t.Errorf("delivery %d to %s: task %s after state rank %d; want the run's order, one completed at the end", i+1, path, s, last)
		}
		seenPause = seenPause || s == a2a.TaskStateInputRequired
		last = n
	}
}

// noPlaintextToken fails t if a token is in a stored configuration, the
// host's SQLite files, its logs or a configuration an A2A client reads.
func noPlaintextToken(t *testing.T, ph *pushHost, run sortie.RunID, tokens map[string]string) {
	t.Helper()
	ctx := testCtx(t)
	stored, err := ph.host.CP.(sortie.PushStore).ListPushConfigs(ctx, run)
	if err != nil || len(stored) != 3 {
		t.Fatalf("ListPushConfigs = %d configs, %v; want 3", len(stored), err)
	}
	storedJSON, _ := json.Marshal(stored)
	listed, err := ph.client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(run)})
	if err != nil {
		t.Fatalf("ListTaskPushConfigs = %v", err)
	}
	listedJSON, _ := json.Marshal(listed)
	got, err := ph.client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(run), ID: "later"})
	if err != nil || got.Token != "" {
		t.Errorf("GetTaskPushConfig(later) = %+v, %v; want it without the token", got, err)
	}
	files := ph.stateFiles(t)
	for _, c := range stored {
		if !bytes.Contains(files, []byte(c.URL)) {
			t.Errorf("the host's SQLite files do not hold config %s's URL %s: the search below would find nothing either", c.ID, c.URL)
		}
		if c.ID != "run-payload" && (c.Format != sortie.PushFormatA2A || len(c.SealedToken) == 0) {
			t.Errorf("stored config %s: format %q, %d-byte sealed token; want a2a and a sealed token", c.ID, c.Format, len(c.SealedToken))
		}
	}
	for _, tok := range tokens {
		for what, s := range map[string]string{"the stored configurations": string(storedJSON), "ListTaskPushConfigs": string(listedJSON),
			"the logs": ph.log.String()} {
			if strings.Contains(s, tok) {
				t.Errorf("%s show the plaintext token %q", what, tok)
			}
		}
		if bytes.Contains(files, []byte(tok)) {
			t.Errorf("the host's SQLite files hold the plaintext token %q", tok)
		}
	}
}
