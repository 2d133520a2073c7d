package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/sign"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
	"github.com/sortie-run/sortie/server/push"
)

func TestPushConfigCRUD(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx := testCtx(t)
	task := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	cfg, err := r.client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "hook-1", URL: "https://example.com/hook"})
	if err != nil {
		t.Fatalf("CreateTaskPushConfig = %v", err)
	}
	want := &a2a.PushConfig{TaskID: task.ID, ID: "hook-1", URL: "https://example.com/hook"}
	if d := cmp.Diff(want, cfg); d != "" {
		t.Errorf("CreateTaskPushConfig (-want +got):\n%s", d)
	}
	got, err := r.client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"})
	if err != nil || cmp.Diff(want, got) != "" {
		t.Errorf("GetTaskPushConfig = %+v, %v; want %+v", got, err, want)
	}
	gen, err := r.client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/two"})
	if err != nil || gen.ID == "" {
		t.Fatalf("CreateTaskPushConfig(no ID) = %+v, %v; want a generated ID", gen, err)
	}
	list, err := r.client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 2 {
		t.Fatalf("ListTaskPushConfigs = %+v, %v; want 2", list, err)
	}
	if err := r.client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"}); err != nil {
		t.Fatalf("DeleteTaskPushConfig = %v", err)
	}
	if _, err := r.client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTaskPushConfig after delete = %v, want ErrTaskNotFound", err)
	}
	stored, err := r.host.CP.(sortie.PushStore).ListPushConfigs(ctx, sortie.RunID(task.ID))
	if err != nil || len(stored) != 1 || stored[0].ID != gen.ID {
		t.Errorf("control plane holds %+v, %v; want only %s", stored, err, gen.ID)
	}
}

func TestPushSecretsAreRefusedNotStored(t *testing.T) {
	r := newRig(t, &a2aserver.Options{CheckPushURL: func(u string) error {
		if strings.Contains(u, "169.254.169.254") {
			return errors.New("cloud metadata address")
		}
		return nil
	}}, nil)
	ctx := testCtx(t)
	task := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	cases := map[string]*a2a.PushConfig{
		"token":          {TaskID: task.ID, URL: "https://example.com/h", Token: "tok-s3cret"},
		"authentication": {TaskID: task.ID, URL: "https://example.com/h", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "cred-s3cret"}},
		"url":            {TaskID: task.ID, URL: "http://169.254.169.254/latest"},
		"id":             {TaskID: task.ID, ID: "Not Valid", URL: "https://example.com/h"},
	}
	for field, cfg := range cases {
		_, err := r.client.CreateTaskPushConfig(ctx, cfg)
		wantInvalid(t, "CreateTaskPushConfig(bad "+field+")", err, field)
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CreateTaskPushConfig error %q shows the secret", err)
		}
	}
	_, err := r.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "probe"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/h", Token: "tok-s3cret"}}})
	wantInvalid(t, "SendMessage(push config with a token)", err, "configuration.taskPushNotificationConfig.token")
	stored, err := r.host.CP.(sortie.PushStore).ListPushConfigs(ctx, sortie.RunID(task.ID))
	if err != nil || len(stored) != 0 {
		t.Errorf("control plane holds %+v, %v after refused configurations; want none", stored, err)
	}
	page, err := r.host.Engine.List(ctx, sortie.ListQuery{})
	if err != nil || len(page.Runs) != 1 {
		t.Errorf("runs after a refused send: %d, %v; want 1 (nothing started)", len(page.Runs), err)
	}
}

// engineOnly hides the engine's control plane, so the handler finds no
// push store.
type engineOnly struct{ sortie.ExecutionEngine }

func TestWithoutAPushStorePushIsNotSupported(t *testing.T) {
	h := remotetest.New(t, nil)
	r := serve(t, h, engineOnly{h.Engine}, nil)
	var card a2a.AgentCard
	getJSON(t, r.srv.URL+a2aserver.CardPath, &card)
	if card.Capabilities.PushNotifications {
		t.Errorf("card says push notifications without a push store")
	}
	task := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	_, err := r.client.CreateTaskPushConfig(testCtx(t), &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/h"})
	if !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		t.Errorf("CreateTaskPushConfig without a push store = %v, want ErrPushNotificationNotSupported", err)
	}
}

func TestAPushNotificationIsDeliveredSigned(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	verifier, err := sign.NewVerifier([]string{secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	states := make(chan string, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := verifier.VerifyRequest(r, 1<<20)
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			states <- "unverified: " + err.Error()
			return
		}
		var p push.Payload
		if err := json.Unmarshal(body, &p); err != nil {
			states <- "undecodable: " + err.Error()
			return
		}
		w.WriteHeader(http.StatusNoContent)
		states <- string(p.Data.Run.State)
	}))
	t.Cleanup(receiver.Close)

	h := remotetest.New(t, nil)
	keys, err := push.SecretKeys("primary", map[string][]string{"primary": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := push.New(h.CP.(sortie.PushStore), h.CP, &http.Client{}, keys, &push.Options{SweepInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("push.New = %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() { _ = d.Run(ctx) }()
	t.Cleanup(func() { stop(); _ = d.Shutdown(context.Background()) })
	r := serve(t, h, h.Engine, &a2aserver.Options{PushChanged: d.Notify})

	_, err = r.client.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg(t, `{"events":1}`, "probe"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{ID: "hook", URL: receiver.URL + "/hook"}}})
	if err != nil {
		t.Fatalf("SendMessage with a push configuration = %v", err)
	}
	timeout := time.After(20 * time.Second)
	for {
		select {
		case s := <-states:
			if s == string(sortie.StateCompleted) {
				return
			}
			if strings.HasPrefix(s, "un") {
				t.Fatalf("receiver got a delivery it could not accept: %s", s)
			}
		case <-timeout:
			t.Fatal("no signed delivery of the completed task within 20 s")
		}
	}
}
