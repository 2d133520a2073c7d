package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/sqlite"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/localkey"
	"github.com/sortie-run/sortie/launchers/local"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/wire"
)

// A body over the limit is refused 413 naming what sets it: the engine's
// variables limit and its setting (the payload store's, as a host names
// it), or sortie.MaxVariablesBytes without a store; 16 KiB for the
// bodies without variables.
func TestOversizeBodyNamesTheSetting(t *testing.T) {
	const setting = "--max-payload-bytes, env SORTIE_MAX_PAYLOAD_BYTES"
	srv := serverWithPayloads(t, sortie.PayloadLimits{MaxPayloadBytes: 64 << 10, MaxPayloadSetting: setting})
	plain := newRig(t, nil)
	id := sortie.NewRunID(time.Now()).String()
	big := `{"agent": "probe", "variables": {"x": "` + strings.Repeat("a", 400<<10) + `"}}`
	for _, c := range []struct {
		name, base, path string
		want             []string
	}{
		{"submit, payload store", srv.URL, "/v1/runs", []string{"limit of 114688 bytes", "65536 bytes (the payload store's per-payload maximum: " + setting + ")", "plus 49152 bytes"}},
		{"resume, payload store", srv.URL, "/v1/runs/" + id + "/resume", []string{"limit of 66560 bytes", setting, "plus 1024 bytes"}},
		{"submit, no store", plain.http.URL, "/v1/runs", []string{fmt.Sprintf("limit of %d bytes", sortie.MaxVariablesBytes+49152), "(sortie.MaxVariablesBytes;"}},
		{"cancel", plain.http.URL, "/v1/runs/" + id + "/cancel", []string{"limit of 16384 bytes: the API's limit of bodies without variables"}},
	} {
		status, _, eb := doAt(t, c.base, http.MethodPost, c.path, big, nil)
		if status != http.StatusRequestEntityTooLarge || eb.Error.Code != wire.CodePayloadTooLarge || eb.Error.Field != "body" {
			t.Errorf("%s: POST %s = %d %+v, want 413 payload_too_large", c.name, c.path, status, eb)
		}
		for _, w := range c.want {
			if !strings.Contains(eb.Error.Message, w) {
				t.Errorf("%s: message %q, want it to say %q", c.name, eb.Error.Message, w)
			}
		}
	}
}

// serverWithPayloads is a server over an SQLite control plane whose
// engine keeps payloads in a file store with limits; it runs nothing.
func serverWithPayloads(t *testing.T, limits sortie.PayloadLimits) *httptest.Server {
	t.Helper()
	cp, err := sqlite.Open(filepath.Join(t.TempDir(), "sortie.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	kek, err := localkey.New(make([]byte, localkey.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := envelope.NewKeyring("local-1", kek)
	if err != nil {
		t.Fatal(err)
	}
	store, bucket, err := payload.OpenFile(t.TempDir(), envelope.NewConfig(envelope.New(ring, nil)), &payload.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.New(&local.Options{InProcess: func(context.Context, *sortie.Invocation) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	eng := sortie.NewEngine(cp, l, probeAgents, &sortie.EngineOptions{Payloads: store})
	srv, err := server.New(server.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); eng.Close(); l.Close(); bucket.Close(); cp.Close() })
	return hs
}
