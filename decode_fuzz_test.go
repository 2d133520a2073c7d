package sortie

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie/internal/strictjson"
)

// rawJSON compares raw JSON by the value it holds (numbers as written),
// an absent value as null: json.Marshal escapes <, > and & in raw values
// (\u0026), which is the same JSON.
var rawJSON = cmp.Transformer("value", func(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "invalid: " + string(b)
	}
	return v
})

// emptyAsNil compares an empty list as absent: "config_refs": [] is
// omitted when encoded.
var emptyAsNil = cmp.Transformer("emptyAsNil", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

// trailingSeeds are fuzz seeds of one valid value followed by more: the
// stray "}" and "]" a dec.More check lets through, a second value,
// garbage, and whitespace (which is fine).
func trailingSeeds(valid string) []string {
	return []string{valid + "}", valid + "]", valid + " {}", valid + valid, valid + "x", " \n" + valid + " \r\n"}
}

// FuzzDecodeMessage: DecodeMessage never panics, accepts only one valid
// JSON value (json.Valid: nothing after it but whitespace) without a key
// twice in any object, and a
// message it accepts re-encodes to JSON that decodes to an equal message.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"event":{"seq":1,"kind":"progress","text":"a","data":{"i":1},"time_ms":5}}`,
		`{"event":{"kind":"k","data":null}}`,
		`{"result":{"output":{"words":3,"top":[["a",1]]}}}`,
		`{"result":{}}`,
		`{"result":{"output_ref":{"store":"file","key":"runs/01JD0000000000000000000000/result-1","size":5,"sha256":"abababababababababababababababababababababababababababababababab"}}}`,
		`{"result":{"output":1,"output_ref":{"store":"file","key":"runs/01JD0000000000000000000000/result-1","size":5,"sha256":"abababababababababababababababababababababababababababababababab"}}}`,
		`{"error":{"type":"exit","message":"exit status 3","retryable":true}}`,
		`{"interrupt":{"state":"input-required","prompt":"p","checkpoint":{"step":1}}}`,
		`{"interrupt":{"state":"input-required","checkpoint_ref":{"store":"file","key":"runs/01JD0000000000000000000000/checkpoint-1","size":5,"sha256":"abababababababababababababababababababababababababababababababab"}}}`,
		`{"interrupt":{"state":"auth-required","checkpoint":1,"checkpoint_ref":{"store":"file","key":"runs/01JD0000000000000000000000/checkpoint-1","size":5,"sha256":"abababababababababababababababababababababababababababababababab"}}}`,
		`{"event":{"kind":"a"},"result":{"output":1}}`,
		`{"step":{"version":"sortie.step/v1","name":"fetch","result":{"n":1},"secret":true,"started_ms":4,"duration_ms":2,"tries":1}}`,
		`{"EVENT":{"KIND":"x","text":"\u00e9\ud800"}}`,
		`{"event":{"kind":"k","kind":"k"}}`,
		`{"event":{"kind":"k","data":{"i":1,"\u0069":2}}}`,
		`{"result":{"output":[{"a":{"b":1,"b":2}}]}}`,
		`{"interrupt":{"state":"input-required","checkpoint":{"s":1,"s":1}}}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range trailingSeeds(`{"event":{"kind":"k"}}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			return
		}
		if _, err := strictjson.Scan(b); !json.Valid(b) || err != nil {
			t.Fatalf("DecodeMessage(%q) accepted input that is not one JSON value, or holds a key twice (%v)", b, err)
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(DecodeMessage(%q)) = %v", b, err)
		}
		back, err := DecodeMessage(enc)
		if err != nil {
			t.Fatalf("DecodeMessage(%q) accepted %q, but its re-encoding %q fails: %v", b, b, enc, err)
		}
		if d := cmp.Diff(m, back, rawJSON); d != "" {
			t.Fatalf("DecodeMessage(%q) re-encoded as %q decodes differently (-first +second):\n%s", b, enc, d)
		}
	})
}

// FuzzDecodeInvocation: DecodeInvocation never panics, accepts only one
// valid JSON value without a key twice in any object, and an invocation it accepts re-encodes to JSON that
// decodes to an equal invocation.
func FuzzDecodeInvocation(f *testing.F) {
	for _, s := range []string{
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l-1","agent":{"name":"probe","runtime":"go:probe"},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":3,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":2,"launch_id":"l","agent":{"name":"a","version":"1","runtime":"exec:wordfreq-py","description":"d","policy":{"max_attempts":3,"heartbeat_ms":5}},"variables":{ "text" : "x" },"config_refs":["db"],"sealed_config":{"k":"v"},"resume":{"checkpoint":{"step":1},"input":"yes"},"deadline_ms":9,"heartbeat_ms":5,"lease_ms":15,"report":{"mode":"callback","callback_url":"https://h/x","token":"t"},"traceparent":"00-x"}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l","agent":{"name":"a","runtime":"go:a"},"config_refs":[],"resume":{},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":1,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":2,"launch_id":"l","agent":{"name":"a","runtime":"go:a"},"resume":{"checkpoint_ref":{"store":"file","key":"runs/01JD0000000000000000000000/checkpoint-1","size":5,"sha256":"abababababababababababababababababababababababababababababababab"},"input_ref":{"store":"file","key":"runs/01JD0000000000000000000000/resume-input-2-ab","size":5,"sha256":"abababababababababababababababababababababababababababababababab"}},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":1,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":2,"launch_id":"l","agent":{"name":"a","runtime":"go:a"},"steps":[{"name":"s","attempt":1,"status":"completed","result":[1],"started_ms":1,"duration_ms":2,"tries":1,"recorded_ms":3},{"name":"t","attempt":1,"status":"completed","sealed":{"v":1},"started_ms":1,"duration_ms":0}],"deadline_ms":1,"heartbeat_ms":1,"lease_ms":1,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":2,"launch_id":"l","agent":{"name":"a","runtime":"go:a"},"steps_ref":{"count":3,"bytes":100},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":1,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l-1","agent":{"name":"probe","runtime":"go:probe"},"variables":{"top":"many","top":5},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":3,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l-1","agent":{"name":"probe","runtime":"go:probe"},"agent":{"name":"textstats","runtime":"go:probe"},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":3,"report":{"mode":"control-plane"}}`,
		`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l","agent":{"name":"a","runtime":"go:a"},"variables_ref":{"store":"file","key":"runs/01JD0000000000000000000000/variables","size":5,"sha256":"abababababababababababababababababababababababababababababababab"},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":1,"report":{"mode":"control-plane"}}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range trailingSeeds(`{"version":"sortie.invocation/v1","run_id":"01JD0000000000000000000000","attempt":1,"launch_id":"l-1","agent":{"name":"probe","runtime":"go:probe"},"deadline_ms":1,"heartbeat_ms":1,"lease_ms":3,"report":{"mode":"control-plane"}}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		inv, err := DecodeInvocation(b)
		if err != nil {
			return
		}
		if _, err := strictjson.Scan(b); !json.Valid(b) || err != nil {
			t.Fatalf("DecodeInvocation(%q) accepted input that is not one JSON value, or holds a key twice (%v)", b, err)
		}
		enc, err := json.Marshal(inv)
		if err != nil {
			t.Fatalf("Marshal(DecodeInvocation(%q)) = %v", b, err)
		}
		back, err := DecodeInvocation(enc)
		if err != nil {
			t.Fatalf("DecodeInvocation accepted %q, but its re-encoding %q fails: %v", b, enc, err)
		}
		if d := cmp.Diff(inv, back, rawJSON, emptyAsNil); d != "" {
			t.Fatalf("DecodeInvocation(%q) re-encoded as %q decodes differently (-first +second):\n%s", b, enc, d)
		}
	})
}
