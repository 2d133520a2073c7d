package callback_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/callback"
	"github.com/sortie-run/sortie/wire"
)

const eventsBody = `{"events":[{"seq":1,"kind":"progress","text":"one"}]}`

// rejection is one request the handler must refuse without storing
// anything.
type rejection struct {
	name   string
	req    request
	status int
	code   string
	field  string // for 400s: the field the error must name
	has    string // a text the message must hold
}

// rejectionRig has two launched runs, A (claimed) and B, and tokens of
// other attempts, runs and hosts.
type rejectionRig struct {
	*host
	a, b     *sortie.Invocation
	aClaims  string
	aSecret  []byte
	bClaims  string
	bSecret  []byte
	att2     string // a valid token for attempt 2 of run A
	expired  string // a token of run A that expired
	foreign  string // a token of run A under another host's key
	tooLarge string
}

func newRejectionRig(t *testing.T) *rejectionRig {
	h := newHost(t, nil)
	r := &rejectionRig{host: h, a: h.launch(t), b: h.launch(t)}
	r.aClaims, r.aSecret = split(t, r.a.Report.Token)
	r.bClaims, r.bSecret = split(t, r.b.Report.Token)
	if status, e := send(t, h.newRequest(t, request{path: callback.PathClaim, claims: r.aClaims, secret: r.aSecret, body: `{}`})); status != http.StatusOK {
		t.Fatalf("claim of run A = %d %+v, want 200", status, e)
	}
	r.att2 = h.issue(t, h.issuer, r.a, func(inv *sortie.Invocation) { inv.Attempt, inv.LaunchID = 2, sortie.NewLaunchID() })
	r.expired = h.issue(t, h.issuer, r.a, func(inv *sortie.Invocation) {
		inv.DeadlineMs = time.Now().Add(-callback.DefaultGrace - time.Minute).UnixMilli()
	})
	other, err := callback.NewKey("other-host")
	if err != nil {
		t.Fatal(err)
	}
	ring, _ := callback.NewKeyring(other)
	foreignIssuer, err := callback.NewIssuer(ring, h.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.foreign = h.issue(t, foreignIssuer, r.a, func(*sortie.Invocation) {})
	r.tooLarge = `{"events":[{"kind":"progress","text":"` + strings.Repeat("a", callback.MaxEventsBodyBytes) + `"}]}`
	return r
}

// signedBy is a request to path with body, claims c and secret s.
func signedBy(path, c string, s []byte, body string) request {
	return request{path: path, claims: c, secret: s, body: body}
}

func (r *rejectionRig) authCases(t *testing.T) []rejection {
	c2, s2 := split(t, r.att2)
	ce, se := split(t, r.expired)
	cf, sf := split(t, r.foreign)
	garbage := make([]byte, 32)
	rand.Read(garbage)
	ev := func(rq request) request { rq.path, rq.body = callback.PathEvents, eventsBody; return rq }
	return []rejection{
		{"bad signature", ev(request{claims: r.aClaims, secret: r.aSecret, edit: func(q *http.Request) {
			q.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(garbage))
		}}), 401, callback.CodeBadSignature, "", ""},
		{"body changed after signing", request{path: callback.PathEvents, claims: r.aClaims, secret: r.aSecret,
			body: strings.Replace(eventsBody, "one", "two", 1), signed: eventsBody}, 401, callback.CodeBadSignature, "", ""},
		{"signed by another attempt's secret", signedBy(callback.PathEvents, r.aClaims, s2, eventsBody), 401, callback.CodeBadSignature, "", ""},
		{"claims of another run", signedBy(callback.PathEvents, r.bClaims, r.aSecret, eventsBody), 401, callback.CodeBadSignature, "", ""},
		{"claims of attempt 2 on attempt 1's state (events)", signedBy(callback.PathEvents, c2, s2, eventsBody), 409, wire.CodeConflict, "", ""},
		{"claims of attempt 2 on attempt 1's state (claim)", signedBy(callback.PathClaim, c2, s2, `{}`), 409, wire.CodeConflict, "", ""},
		{"claims of attempt 2 on attempt 1's state (complete)", signedBy(callback.PathComplete, c2, s2, `{"outcome":{"result":1}}`), 409, wire.CodeConflict, "", ""},
		{"expired token", signedBy(callback.PathEvents, ce, se, eventsBody), 401, callback.CodeTokenExpired, "", "expired"},
		{"timestamp in the past", ev(request{claims: r.aClaims, secret: r.aSecret, ts: time.Now().Add(-6 * time.Minute)}), 401, callback.CodeTimestamp, "", ""},
		{"timestamp in the future", ev(request{claims: r.aClaims, secret: r.aSecret, ts: time.Now().Add(6 * time.Minute)}), 401, callback.CodeTimestamp, "", ""},
		{"unknown key ID", signedBy(callback.PathEvents, cf, sf, eventsBody), 401, callback.CodeUnknownKey, "", `"other-host"`},
		{"no Sortie-Attempt header", ev(request{secret: r.aSecret}), 401, callback.CodeMissingCreds, "", callback.HeaderAttempt},
		{"malformed claims", ev(request{claims: "not-claims", secret: r.aSecret}), 401, callback.CodeMalformedClaims, "", ""},
		{"claims with the secret appended", ev(request{claims: r.a.Report.Token, secret: r.aSecret}), 401, callback.CodeMalformedClaims, "", ""},
		{"no webhook headers", ev(request{claims: r.aClaims}), 401, callback.CodeMissingHeader, "", ""},
		{"no webhook-id", ev(request{claims: r.aClaims, secret: r.aSecret, edit: func(q *http.Request) { q.Header.Del("webhook-id") }}), 401, callback.CodeMissingHeader, "", ""},
		{"no webhook-timestamp", ev(request{claims: r.aClaims, secret: r.aSecret, edit: func(q *http.Request) { q.Header.Del("webhook-timestamp") }}), 401, callback.CodeMissingHeader, "", ""},
		{"no webhook-signature", ev(request{claims: r.aClaims, secret: r.aSecret, edit: func(q *http.Request) { q.Header.Del("webhook-signature") }}), 401, callback.CodeMissingHeader, "", ""},
	}
}

func (r *rejectionRig) bodyCases() []rejection {
	ok := func(path, body string) request { return signedBy(path, r.aClaims, r.aSecret, body) }
	claimB := func(body string) request { return signedBy(callback.PathClaim, r.bClaims, r.bSecret, body) }
	bigData := `{"events":[{"kind":"progress","data":"` + strings.Repeat("d", sortie.MaxEventDataBytes) + `"}]}`
	return []rejection{
		{"oversize events body", ok(callback.PathEvents, r.tooLarge), 413, wire.CodePayloadTooLarge, "body", fmt.Sprint(callback.MaxEventsBodyBytes)},
		{"oversize claim body", ok(callback.PathClaim, `{"x":"`+strings.Repeat("a", callback.MaxClaimBodyBytes)+`"}`), 413, wire.CodePayloadTooLarge, "body", fmt.Sprint(callback.MaxClaimBodyBytes)},
		{"oversize complete body", ok(callback.PathComplete, `{"outcome":{"result":"`+strings.Repeat("r", callback.MaxCompleteBodyBytes)+`"}}`), 413, wire.CodePayloadTooLarge, "body", fmt.Sprint(callback.MaxCompleteBodyBytes)},
		{"malformed JSON", ok(callback.PathEvents, `{"events":[`), 400, wire.CodeInvalidArgument, "body", ""},
		{"trailing data", ok(callback.PathEvents, eventsBody+`{}`), 400, wire.CodeInvalidArgument, "body", ""},
		{"trailing brace", ok(callback.PathEvents, eventsBody+`}`), 400, wire.CodeInvalidArgument, "body", ""},
		{"trailing bracket", ok(callback.PathComplete, `{"outcome":{"result":1}}]`), 400, wire.CodeInvalidArgument, "body", ""},
		{"seq of the wrong type", ok(callback.PathEvents, `{"events":[{"seq":"1","kind":"progress"}]}`), 400, wire.CodeInvalidArgument, "events[0].seq", ""},
		{"negative seq", ok(callback.PathEvents, `{"events":[{"kind":"a"},{"seq":-1,"kind":"progress"}]}`), 400, wire.CodeInvalidArgument, "events[1].seq", ""},
		{"no events", ok(callback.PathEvents, `{}`), 400, wire.CodeInvalidArgument, "events", "missing"},
		{"empty events", ok(callback.PathEvents, `{"events":[]}`), 400, wire.CodeInvalidArgument, "events", ""},
		{"event without kind", ok(callback.PathEvents, `{"events":[{"text":"x"}]}`), 400, wire.CodeInvalidArgument, "events[0].kind", ""},
		{"run ID in the body", ok(callback.PathEvents, `{"events":[{"kind":"a"}],"run_id":"`+string(r.b.RunID)+`"}`), 400, wire.CodeInvalidArgument, "run_id", ""},
		{"attempt in an event", ok(callback.PathEvents, `{"events":[{"kind":"a","attempt":2}]}`), 400, wire.CodeInvalidArgument, "events[0].attempt", ""},
		{"event data over its limit", ok(callback.PathEvents, bigData), 400, wire.CodeInvalidArgument, "events[0].data", fmt.Sprint(sortie.MaxEventDataBytes)},
		{"claim with a body", ok(callback.PathClaim, `{"launch_id":"x"}`), 400, wire.CodeInvalidArgument, "launch_id", ""},
		{"step result_ref of a key outside runs/", ok(callback.PathStep, `{"step":{"name":"a","attempt":1,"status":"completed","result_ref":{"store":"s3://b","key":"other/step-slot-1-0","size":1,"sha256":"`+strings.Repeat("a", 64)+`"}}}`), 400, wire.CodeInvalidArgument, "step.result_ref.key", ""},
		// Run B is launched, not claimed: a claim with a bad shape would
		// otherwise claim it.
		{"claim with a bad arch", claimB(`{"usage":{"memory_mb":128,"arch":"sparc"}}`), 400, wire.CodeInvalidArgument, "usage.arch", ""},
		{"claim with a bad billing", claimB(`{"usage":{"vcpu":1,"billing":"spot"}}`), 400, wire.CodeInvalidArgument, "usage.billing", ""},
		{"claim with a negative memory", claimB(`{"usage":{"memory_mb":-128}}`), 400, wire.CodeInvalidArgument, "usage.memory_mb", ""},
		{"claim with a fractional memory", claimB(`{"usage":{"memory_mb":1.5}}`), 400, wire.CodeInvalidArgument, "usage.memory_mb", ""},
		{"claim with requests", claimB(`{"usage":{"memory_mb":128,"requests":1}}`), 400, wire.CodeInvalidArgument, "usage.requests", ""},
		{"claim with a duration", claimB(`{"usage":{"duration_ms":5}}`), 400, wire.CodeInvalidArgument, "usage.duration_ms", ""},
		{"claim with a usage of the wrong type", claimB(`{"usage":128}`), 400, wire.CodeInvalidArgument, "usage", ""},
		{"outcome with two fields", ok(callback.PathComplete, `{"outcome":{"result":1,"error":{"type":"x","message":"y"}}}`), 400, wire.CodeInvalidArgument, "outcome", "exactly one"},
		{"empty outcome", ok(callback.PathComplete, `{"outcome":{}}`), 400, wire.CodeInvalidArgument, "outcome", ""},
		{"interrupt of a terminal state", ok(callback.PathComplete, `{"outcome":{"interrupt":{"state":"completed"}}}`), 400, wire.CodeInvalidArgument, "outcome.interrupt.state", ""},
		{"error without type", ok(callback.PathComplete, `{"outcome":{"error":{"message":"y"}}}`), 400, wire.CodeInvalidArgument, "outcome.error.type", ""},
		{"wrong method", request{method: http.MethodGet, path: callback.PathEvents, claims: r.aClaims}, 405, wire.CodeMethodNotAllowed, "", "POST"},
		{"unknown route", ok(callback.PathPrefix+"/result", eventsBody), 404, wire.CodeNotFound, "", ""},
	}
}

// Every refused request gets its status and code, and nothing stored for
// run A or run B changes.
func TestRefusedRequestsStoreNothing(t *testing.T) {
	r := newRejectionRig(t)
	for _, tc := range append(r.authCases(t), r.bodyCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			beforeA, beforeB := r.stored(t, r.a.RunID), r.stored(t, r.b.RunID)
			status, e := send(t, r.newRequest(t, tc.req))
			if status != tc.status || e.Code != tc.code || e.Field != tc.field || !strings.Contains(e.Message, tc.has) {
				t.Errorf("POST %s (%s) = %d %+v, want %d code %q field %q with a message holding %q",
					tc.req.path, tc.name, status, e, tc.status, tc.code, tc.field, tc.has)
			}
			if diff := cmp.Diff(beforeA, r.stored(t, r.a.RunID)); diff != "" {
				t.Errorf("%s changed run A's store (-before +after):\n%s", tc.name, diff)
			}
			if diff := cmp.Diff(beforeB, r.stored(t, r.b.RunID)); diff != "" {
				t.Errorf("%s changed run B's store (-before +after):\n%s", tc.name, diff)
			}
		})
	}
	logs := r.logs.String()
	_, secretB := split(t, r.b.Report.Token)
	for what, s := range map[string]string{"token A": r.a.Report.Token, "secret A": base64.StdEncoding.EncodeToString(r.aSecret),
		"secret B": base64.StdEncoding.EncodeToString(secretB), "a body": `"text":"one"`} {
		if strings.Contains(logs, s) {
			t.Errorf("the handler's logs hold %s", what)
		}
	}
	if !strings.Contains(logs, "callback refused") || !strings.Contains(logs, string(r.a.RunID)) {
		t.Errorf("the handler's logs name no refusal of run %s:\n%s", r.a.RunID, logs)
	}
}

// A complete whose result is over sortie.MaxResultBytes but within the
// body limit is no refusal the worker cannot answer: the attempt ends once
// with a permanent output_too_large error naming the size and the limit.
func TestOversizeResultEndsTheAttempt(t *testing.T) {
	r := newRejectionRig(t)
	body := `{"outcome":{"result":"` + strings.Repeat("r", sortie.MaxResultBytes) + `"}}`
	status, e := send(t, r.newRequest(t, signedBy(callback.PathComplete, r.aClaims, r.aSecret, body)))
	if status != http.StatusOK {
		t.Fatalf("POST %s (result of %d bytes) = %d %+v, want 200", callback.PathComplete, sortie.MaxResultBytes+2, status, e)
	}
	run := r.stored(t, r.a.RunID).Run
	a := run.Current()
	if run.State != sortie.StateFailed || a.Error == nil || a.Error.Type != sortie.ErrorTypeOutputTooLarge || a.Error.Retryable ||
		!strings.Contains(a.Error.Message, fmt.Sprint(sortie.MaxResultBytes)) {
		t.Errorf("run after an oversize result = %s, attempt error %+v, want failed with a permanent %s naming the limit %d",
			run.State, a.Error, sortie.ErrorTypeOutputTooLarge, sortie.MaxResultBytes)
	}
}

// A request accepted once is refused when sent again with the same
// webhook-id, even with a fresh timestamp and signature, and the replay
// stores nothing.
func TestReplayIsRefused(t *testing.T) {
	r := newRejectionRig(t)
	rq := signedBy(callback.PathEvents, r.aClaims, r.aSecret, eventsBody)
	rq.id, rq.ts = freshID(), time.Now()
	if status, e := send(t, r.newRequest(t, rq)); status != http.StatusOK {
		t.Fatalf("first POST %s = %d %+v, want 200", rq.path, status, e)
	}
	before := r.stored(t, r.a.RunID)
	if len(before.Events) != 1 {
		t.Fatalf("events after the first POST = %d, want 1", len(before.Events))
	}
	for _, name := range []string{"same request", "re-signed with a new timestamp"} {
		if name != "same request" {
			rq.ts = time.Now().Add(time.Second)
		}
		status, e := send(t, r.newRequest(t, rq))
		if status != http.StatusUnauthorized || e.Code != callback.CodeReplayed {
			t.Errorf("replay (%s) = %d %+v, want 401 %q", name, status, e, callback.CodeReplayed)
		}
		if diff := cmp.Diff(before, r.stored(t, r.a.RunID)); diff != "" {
			t.Errorf("replay (%s) changed the store (-before +after):\n%s", name, diff)
		}
	}
}

// The largest result a run may have fits the complete route's limit.
func TestLargestResultIsAccepted(t *testing.T) {
	r := newRejectionRig(t)
	result := `"` + strings.Repeat("r", sortie.MaxResultBytes-2) + `"`
	rq := signedBy(callback.PathComplete, r.aClaims, r.aSecret, `{"outcome":{"result":`+result+`}}`)
	if status, e := send(t, r.newRequest(t, rq)); status != http.StatusOK {
		t.Fatalf("POST %s with a result of %d bytes = %d %+v, want 200", rq.path, len(result), status, e)
	}
	if st := r.stored(t, r.a.RunID); st.Run.State != sortie.StateCompleted || len(st.Run.Result) != sortie.MaxResultBytes {
		t.Errorf("run after complete = %s with a result of %d bytes, want completed with %d", st.Run.State, len(st.Run.Result), sortie.MaxResultBytes)
	}
}
