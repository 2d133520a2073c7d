package controlplanetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
)

// sealedToken returns a stand-in for a sealed token: JSON shaped like an
// envelope, with spacing a re-encoding would lose, so a driver must keep
// the bytes as given.
func sealedToken(tag string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"v": 1, "kid": "push-key",  "ctx": {"purpose": "a2a-push-token"}, "dk": "AQID", "ct": %q}`, tag))
}

// testPushTokenCopied checks that the stored sealed token shares no memory
// with the caller's: changing the slice given to PutPushConfig or one a
// read returned changes nothing stored.
func testPushTokenCopied(t *testing.T, f *fixture) {
	run := f.submitted(T0)
	in := pushConfig(run.ID, "hook")
	in.Format, in.SealedToken = sortie.PushFormatA2A, sealedToken("kept")
	want := sealedToken("kept")
	got := f.putPush(in, T0+1)
	clear(in.SealedToken)
	clear(got.SealedToken)
	read := f.getPush(run.ID, "hook")
	if !bytes.Equal(read.SealedToken, want) {
		t.Fatalf("GetPushConfig after the caller changed its slices: SealedToken = %q, want %q", read.SealedToken, want)
	}
	clear(read.SealedToken)
	for i, c := range f.listPush(run.ID) {
		if !bytes.Equal(c.SealedToken, want) {
			t.Errorf("ListPushConfigs()[%d].SealedToken after the caller changed a read's slice = %q, want %q", i, c.SealedToken, want)
		}
	}
	if f.h.SharedAcrossProcesses() {
		peer := f.h.MakePeer(f.ctx, t, f.cp)
		got, err := peer.GetPushConfig(f.ctx, run.ID, "hook")
		must(t, "peer GetPushConfig", err)
		if got.Format != sortie.PushFormatA2A || !bytes.Equal(got.SealedToken, want) {
			t.Errorf("peer GetPushConfig = format %q, token %q; want %q, %q", got.Format, got.SealedToken, sortie.PushFormatA2A, want)
		}
	}
}

// testPushBadFormatOrToken checks that an unknown format, an oversize
// sealed token and one that is not JSON are refused naming the field, and
// leave the stored configuration as it was.
func testPushBadFormatOrToken(t *testing.T, f *fixture) {
	ps := f.cp
	run := f.submitted(T0)
	ok := pushConfig(run.ID, "hook")
	ok.Format, ok.SealedToken = sortie.PushFormatA2A, sealedToken("stored")
	f.putPush(ok, T0+1)
	before := f.listPush(run.ID)
	limit := fmt.Sprint(sortie.MaxSealedTokenBytes)
	big := json.RawMessage(`"` + strings.Repeat("a", sortie.MaxSealedTokenBytes-1) + `"`)
	for _, c := range []struct {
		name, field, mention string
		format               string
		token                json.RawMessage
	}{
		{"unknown format", "format", "xml", "xml", nil},
		{"upper-case format", "format", "A2A", "A2A", nil},
		{"oversize sealed token", "sealed_token", limit, "", big},
		{"sealed token not JSON", "sealed_token", "JSON", sortie.PushFormatA2A, json.RawMessage("not json")},
	} {
		cfg := pushConfig(run.ID, "hook")
		cfg.Format, cfg.SealedToken = c.format, c.token
		_, err := ps.PutPushConfig(f.ctx, cfg, T0+2)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field || !strings.Contains(ve.Reason, c.mention) {
			t.Errorf("PutPushConfig(%s) = %v, want a ValidationError of %s mentioning %q", c.name, err, c.field, c.mention)
		}
	}
	if diff := cmp.Diff(before, f.listPush(run.ID)); diff != "" {
		t.Errorf("refused calls changed the run's push configurations (-want +got):\n%s", diff)
	}
	at := pushConfig(run.ID, "hook")
	at.SealedToken = json.RawMessage(`"` + strings.Repeat("a", sortie.MaxSealedTokenBytes-2) + `"`)
	if _, err := ps.PutPushConfig(f.ctx, at, T0+3); err != nil {
		t.Fatalf("PutPushConfig(sealed token of exactly %d bytes) = %v, want success", sortie.MaxSealedTokenBytes, err)
	}
	if got := f.getPush(run.ID, "hook"); !bytes.Equal(got.SealedToken, at.SealedToken) || got.Format != "" {
		t.Errorf("GetPushConfig after storing a %d-byte sealed token = format %q, %d-byte token; want no format and the token as given",
			sortie.MaxSealedTokenBytes, got.Format, len(got.SealedToken))
	}
}
