package runs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie/remote"
	"github.com/sortie-run/sortie/remote/remotetest"
	"github.com/sortie-run/sortie/remote/runs"
)

const hostURL = "sortie://test-host"

func newTransport(t *testing.T) (*runs.Transport, *remotetest.Host) {
	t.Helper()
	h := remotetest.New(t, nil)
	return runs.New(runs.Single(hostURL, h.Engine), &runs.Options{PollInterval: 10 * time.Millisecond}), h
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func call(data string) *remote.CallRequest {
	return &remote.CallRequest{AgentURL: hostURL, Skill: "probe", Message: remote.Message{Data: json.RawMessage(data)}}
}

// jsonEq fails t unless got and want hold the same JSON value.
func jsonEq(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s = %s, not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}
