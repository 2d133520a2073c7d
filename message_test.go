package sortie

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		name, line, field string // field "" = accepted
	}{
		{"event", `{"event":{"seq":1,"kind":"progress","text":"10%"}}`, ""},
		{"event without seq", `{"event":{"kind":"log"}}`, ""},
		{"result", `{"result":{"output":{"words":3}}}`, ""},
		{"error", `{"error":{"type":"boom","message":"x","retryable":true}}`, ""},
		{"interrupt", `{"interrupt":{"state":"input-required","prompt":"name?","checkpoint":{"s":1}}}`, ""},
		{"step", `{"step":{"version":"sortie.step/v1","name":"fetch","result":{"pages":3},"duration_ms":12}}`, ""},
		{"step with null result", `{"step":{"version":"sortie.step/v1","name":"noop","result":null}}`, ""},
		{"step without version", `{"step":{"name":"fetch","result":1}}`, "step.version"},
		{"step of another version", `{"step":{"version":"sortie.step/v2","name":"fetch","result":1}}`, "step.version"},
		{"step without name", `{"step":{"version":"sortie.step/v1","result":1}}`, "step.name"},
		{"step without result", `{"step":{"version":"sortie.step/v1","name":"fetch"}}`, "step.result"},
		{"step by reference", `{"step":{"version":"sortie.step/v1","name":"big","result_ref":{"store":"file","key":"runs/01JD0000000000000000000000/step-a-1","size":5,"sha256":"` + strings.Repeat("a", 64) + `"}}}`, ""},
		{"step with result and reference", `{"step":{"version":"sortie.step/v1","name":"big","result":1,"result_ref":{"store":"file","key":"runs/01JD0000000000000000000000/step-a-1","size":5,"sha256":"` + strings.Repeat("a", 64) + `"}}}`, "step.result"},
		{"step without result", `{"step":{"version":"sortie.step/v1","name":"big"}}`, "step.result"},
		{"step result too big", `{"step":{"version":"sortie.step/v1","name":"big","result":"` + strings.Repeat("r", MaxStepResultBytes) + `"}}`, "step.result"},
		{"step negative duration", `{"step":{"version":"sortie.step/v1","name":"fetch","result":1,"duration_ms":-1}}`, "step"},
		{"none set", `{}`, "message"},
		{"two set", `{"event":{"kind":"a"},"result":{"output":1}}`, "message"},
		{"unknown field", `{"evnt":{"kind":"a"}}`, "message"},
		{"trailing data", `{"result":{"output":1}} {}`, "message"},
		{"trailing brace", `{"event":{"kind":"a"}}}`, "message"},
		{"trailing bracket", `{"event":{"kind":"a"}}]`, "message"},
		{"trailing garbage", `{"event":{"kind":"a"}}x`, "message"},
		{"whitespace around", " \t{\"event\":{\"kind\":\"a\"}} \r", ""},
		{"not json", `hello`, "message"},
		{"event kind missing", `{"event":{"seq":1}}`, "event.kind"},
		{"negative seq", `{"event":{"seq":-1,"kind":"a"}}`, "event.seq"},
		{"error type missing", `{"error":{"message":"x"}}`, "error.type"},
		{"interrupt bad state", `{"interrupt":{"state":"completed"}}`, "interrupt.state"},
		{"oversize text", `{"event":{"kind":"a","text":"` + strings.Repeat("x", MaxEventTextBytes+1) + `"}}`, "event.text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tc.line))
			if tc.field == "" {
				if err != nil || m == nil {
					t.Fatalf("DecodeMessage(%s) = %v, %v; want a message", tc.name, m, err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("DecodeMessage(%s) error = %v, want a ValidationError on field %q", tc.name, err, tc.field)
			}
		})
	}
}

// TestDecodeMessageNamesTrailingData: the error says what follows the
// message and where, not just that it is invalid.
func TestDecodeMessageNamesTrailingData(t *testing.T) {
	_, err := DecodeMessage([]byte(`{"event":{"kind":"a"}}}`))
	if want := "invalid message: data after the JSON value at byte 22"; err == nil || err.Error() != want {
		t.Fatalf("DecodeMessage(`{\"event\":{\"kind\":\"a\"}}}`) = %v, want %q", err, want)
	}
}

func TestDecodeMessageTooLarge(t *testing.T) {
	line := []byte(`{"result":{"output":"` + strings.Repeat("x", MaxMessageBytes) + `"}}`)
	_, err := DecodeMessage(line)
	if err == nil || !strings.Contains(err.Error(), "limit 1048576") {
		t.Fatalf("DecodeMessage(%d bytes) = %v, want an error naming the limit", len(line), err)
	}
}

func TestStateTerminal(t *testing.T) {
	terminal := map[State]bool{StateCompleted: true, StateFailed: true, StateCancelled: true, StateRejected: true}
	for _, s := range knownStates {
		if got := s.Terminal(); got != terminal[s] {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, terminal[s])
		}
		if p, err := ParseState(string(s)); err != nil || p != s {
			t.Errorf("ParseState(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParseState("done"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ParseState(done) error = %v, want ErrInvalidArgument", err)
	}
	codes := map[State]int{StateCompleted: 0, StateFailed: 1, StateRejected: 1, StateCancelled: 3, StateInputRequired: 4, StateAuthRequired: 4}
	for s, want := range codes {
		if got := s.ExitCode(); got != want {
			t.Errorf("%s.ExitCode() = %d, want %d", s, got, want)
		}
	}
}

func TestCursor(t *testing.T) {
	c, err := ParseCursor("2.17")
	if err != nil || c != (Cursor{Attempt: 2, Seq: 17}) || c.String() != "2.17" {
		t.Fatalf("ParseCursor(2.17) = %v, %v", c, err)
	}
	for _, bad := range []string{"2", "a.1", "1.-3", "-1.0", "1.2.3"} {
		if _, err := ParseCursor(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseCursor(%q) error = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if !(Cursor{1, 9}).Before(Cursor{2, 1}) || (Cursor{2, 1}).Before(Cursor{1, 9}) {
		t.Error("Cursor.Before does not order by attempt, then seq")
	}
}
