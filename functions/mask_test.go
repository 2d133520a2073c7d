package functions

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

const maskToken = "tok_5eCr3t+/value=="

// forms returns every encoding of maskToken the masker knows.
func forms() map[string]string {
	v := []byte(maskToken)
	return map[string]string{
		"raw": maskToken, "base64": base64.StdEncoding.EncodeToString(v), "base64 raw": base64.RawStdEncoding.EncodeToString(v),
		"base64url": base64.URLEncoding.EncodeToString(v), "base64url raw": base64.RawURLEncoding.EncodeToString(v),
		"hex": hex.EncodeToString(v), "HEX": strings.ToUpper(hex.EncodeToString(v)),
	}
}

func TestMaskText(t *testing.T) {
	m := newMasker(map[string]string{"API_TOKEN": maskToken, "PIN": "1234"})
	for name, form := range forms() {
		got := m.text("before " + form + " after")
		if got != "before [REDACTED:API_TOKEN] after" {
			t.Errorf("text(%s form) = %q, want the form replaced by the marker", name, got)
		}
	}
	if got := m.text("pin 1234"); got != "pin 1234" {
		t.Errorf("text(a value under 8 bytes) = %q, want it untouched (such values are refused when sealed)", got)
	}
	if newMasker(map[string]string{"PIN": "1234"}) != nil || newMasker(nil) != nil {
		t.Error("newMasker of nothing to mask is not nil")
	}
}

// JSON stays valid JSON: strings and keys masked, a number holding a
// value becomes a string, escapes are seen through.
func TestMaskJSON(t *testing.T) {
	m := newMasker(map[string]string{"API_TOKEN": maskToken, "ACCOUNT": "123456789012"})
	for _, tc := range []struct{ in, want string }{
		{`{"t":"` + maskToken + `","n":1}`, `{"n":1,"t":"[REDACTED:API_TOKEN]"}`},
		{`{"` + forms()["hex"] + `":true}`, `{"[REDACTED:API_TOKEN]":true}`},
		{`[123456789012, 5]`, `["[REDACTED:ACCOUNT]",5]`},
		{`"tok_5eCr3t+\/value=="`, `"[REDACTED:API_TOKEN]"`},
		{`"\u0074ok_5eCr3t+/value=="`, `"[REDACTED:API_TOKEN]"`},
		{`{"plain":"nothing to see"}`, `{"plain":"nothing to see"}`},
	} {
		got := m.json(json.RawMessage(tc.in))
		if string(got) != tc.want || !json.Valid(got) {
			t.Errorf("json(%s) = %s, want %s (valid JSON)", tc.in, got, tc.want)
		}
	}
}

// Everything an attempt reports is masked before it leaves the worker:
// events, a step's result, the result, an error, the log.
func TestAttemptMasksConfigValues(t *testing.T) {
	f := forms()
	everything := fmt.Sprintf("raw %s b64 %s url %s hex %s", f["raw"], f["base64"], f["base64url raw"], f["hex"])
	for _, tc := range []struct {
		name string
		h    Handler
	}{
		{"result", func(ctx context.Context, c *Call) (any, error) {
			_ = c.Emit("leak", everything, map[string]string{"token": maskToken, f["HEX"]: "key"})
			c.Logger().Info("calling the API with "+maskToken, "token", maskToken, "err", errors.New("auth "+f["base64"]))
			if _, err := c.Step(ctx, "echo", func(context.Context) (any, error) { return everything, nil }); err != nil {
				return nil, err
			}
			return map[string]string{"echo": everything}, nil
		}},
		{"error", func(context.Context, *Call) (any, error) { return nil, errors.New("401 for " + everything) }},
		{"interrupt", func(context.Context, *Call) (any, error) {
			return nil, Interrupt(sortie.StateAuthRequired, "renew "+everything, map[string]string{"t": maskToken})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, logs := newWorker(register(tc.h))
			inv := testInvocation("go:h", "")
			w.InlineConfig = &InlineConfig{Opener: sealedFor(t, inv, fmt.Sprintf(`{"API_TOKEN":%q}`, maskToken), localTestKEK(t)), Allow: []string{"API_TOKEN"}}
			rep := newRecorder(t)
			if _, err := w.Execute(t.Context(), inv, rep); err != nil {
				t.Fatal(err)
			}
			events, finishes, _ := rep.snapshot()
			all, _ := json.Marshal(map[string]any{"events": events, "finishes": finishes, "steps": rep.steps})
			text := string(all) + logs.String()
			for name, form := range f {
				if strings.Contains(text, form) {
					t.Errorf("the %s form of the token left the worker: %s", name, text)
				}
			}
			if !strings.Contains(text, "[REDACTED:API_TOKEN]") {
				t.Errorf("no marker in what the attempt reported: %s", text)
			}
		})
	}
}
