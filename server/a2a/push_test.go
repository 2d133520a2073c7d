package a2a_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/remote/remotetest"
	a2aserver "github.com/sortie-run/sortie/server/a2a"
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

// With a token sealer a configuration's token is taken, stored sealed and
// never returned; a token that is not a plain header value, or is over
// MaxTokenBytes, is refused naming the field without showing the token;
// credentials are still refused; nothing refused is stored.
func TestPushTokensWithASealer(t *testing.T) {
	sealer := newSealer(t)
	r := newRig(t, &a2aserver.Options{TokenSealer: sealer}, nil)
	ctx := testCtx(t)
	task := send(t, r, msg(t, `{"events":0}`, "probe"), false)
	for _, c := range []struct {
		name, field string
		cfg         *a2a.PushConfig
	}{
		{"a line break in the token", "token", &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/h", Token: "tok-s3cret\r\nX-Injected: 1"}},
		{"a leading space in the token", "token", &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/h", Token: " tok-s3cret"}},
		{"a 1200-byte token", "token", &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/h", Token: strings.Repeat("s3cret", 200)}},
		{"credentials", "authentication", &a2a.PushConfig{TaskID: task.ID, URL: "https://example.com/h", Token: "tok-s3cret",
			Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "cred-s3cret"}}},
	} {
		_, err := r.client.CreateTaskPushConfig(ctx, c.cfg)
		wantInvalid(t, "CreateTaskPushConfig("+c.name+")", err, c.field)
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CreateTaskPushConfig(%s) error %q shows the secret", c.name, err)
		}
	}
	_, err := r.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg(t, `{"events":0}`, "probe"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "https://example.com/h", Token: "tok\x00s3cret"}}})
	wantInvalid(t, "SendMessage(push config with a bad token)", err, "configuration.taskPushNotificationConfig.token")
	ps := r.host.CP.(sortie.PushStore)
	if stored, err := ps.ListPushConfigs(ctx, sortie.RunID(task.ID)); err != nil || len(stored) != 0 {
		t.Fatalf("control plane holds %+v, %v after refused configurations; want none", stored, err)
	}

	const token = "tok-s3cret-good"
	got, err := r.client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "hook", URL: "https://example.com/h", Token: token})
	if want := (&a2a.PushConfig{TaskID: task.ID, ID: "hook", URL: "https://example.com/h"}); err != nil || cmp.Diff(want, got) != "" {
		t.Fatalf("CreateTaskPushConfig(good token) = %+v, %v; want %+v (no token)", got, err, want)
	}
	stored, err := ps.GetPushConfig(ctx, sortie.RunID(task.ID), "hook")
	if err != nil || stored.Format != sortie.PushFormatA2A || strings.Contains(string(stored.SealedToken), token) {
		t.Fatalf("stored config = %+v, %v; want format a2a with the token sealed", stored, err)
	}
	if opened, err := a2aserver.TokenOpener(sealer)(ctx, stored); err != nil || opened != token {
		t.Errorf("TokenOpener(stored config) = %q, %v; want the token", opened, err)
	}
}

// The envelope sealer binds a token to its run and configuration ID: it
// opens for them only, and not once changed.
func TestEnvelopeSealerBindsRunAndConfiguration(t *testing.T) {
	ctx, s := testCtx(t), newSealer(t)
	run, other := sortie.NewRunID(time.Now()), sortie.NewRunID(time.Now().Add(time.Second))
	sealed, err := s.SealToken(ctx, run, "hook", []byte("tok-s3cret"))
	if err != nil || bytes.Contains(sealed, []byte("tok-s3cret")) || len(sealed) > sortie.MaxSealedTokenBytes {
		t.Fatalf("SealToken = %s, %v; want an envelope without the plaintext within %d bytes", sealed, err, sortie.MaxSealedTokenBytes)
	}
	if pt, err := s.OpenToken(ctx, run, "hook", sealed); err != nil || string(pt) != "tok-s3cret" {
		t.Errorf("OpenToken(same run and configuration) = %q, %v; want the token", pt, err)
	}
	changed := bytes.Replace(sealed, []byte(`"ct":"`), []byte(`"ct":"AAAA`), 1)
	for name, c := range map[string]struct {
		run    sortie.RunID
		id     string
		sealed []byte
	}{
		"another configuration": {run, "hook2", sealed},
		"another run":           {other, "hook", sealed},
		"a changed envelope":    {run, "hook", changed},
	} {
		if pt, err := s.OpenToken(ctx, c.run, c.id, c.sealed); err == nil || strings.Contains(err.Error(), "tok-s3cret") {
			t.Errorf("OpenToken(%s) = %q, %v; want an error without the token", name, pt, err)
		}
	}
	big := bytes.Repeat([]byte("x"), a2aserver.MaxTokenBytes)
	if sealed, err := s.SealToken(ctx, run, strings.Repeat("h", 63), big); err != nil || len(sealed) > sortie.MaxSealedTokenBytes {
		t.Errorf("SealToken(%d-byte token) = %d bytes, %v; want at most %d", len(big), len(sealed), err, sortie.MaxSealedTokenBytes)
	}
}
