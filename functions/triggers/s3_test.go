package triggers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sortie-run/sortie/functions/triggers"
)

// s3Event is aws-lambda-go's s3-event.json sample with the object key
// replaced by raw, as S3 would write it into the notification.
func s3Event(t *testing.T, raw string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	ev := strings.Replace(string(readSample(t, "aws/s3-event.json")), `"Happy%20Face.jpg"`, string(b), 1)
	if !strings.Contains(ev, string(b)) {
		t.Fatal("the sample's key was not replaced")
	}
	return json.RawMessage(ev)
}

// Keys reach variables, @subject and the idempotency key decoded exactly
// once, query-style, as S3 encodes them; s3.object.key keeps what S3 sent.
func TestS3KeysDecodeExactlyOnce(t *testing.T) {
	for _, tc := range []struct{ raw, key string }{
		{"Happy+Face.jpg", "Happy Face.jpg"},
		{"Happy%20Face.jpg", "Happy Face.jpg"},
		{"c%2B%2B+notes.txt", "c++ notes.txt"},
		{"uploads/a%2Bb.csv", "uploads/a+b.csv"},
		{"100%25+done.csv", "100% done.csv"},
		{"literal%252B.csv", "literal%2B.csv"},
		{"report+%281%29.pdf", "report (1).pdf"},
		{"%C3%A9t%C3%A9/%E6%97%A5%E6%9C%AC+%C3%BC.txt", "été/日本 ü.txt"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			router, r := newRouter(t)
			out, err := router.HandleLambda(context.Background(), s3Event(t, tc.raw))
			if err != nil {
				t.Fatalf("HandleLambda(key %q) = %v", tc.raw, err)
			}
			o := out.(*triggers.Report).Outcomes[0]
			if want := "trigger/s3-uploads/s3:sourcebucket/Happy Sequencer/" + tc.key; o.Rule != "s3-uploads" || o.IdempotencyKey != want {
				t.Fatalf("outcome = %+v, want rule s3-uploads with key %q", o, want)
			}
			want, _ := json.Marshal(map[string]any{"bucket": "sourcebucket", "key": tc.key, "raw_key": tc.raw, "subject": tc.key, "size": 1024})
			checkResult(t, r, o.RunID, string(want))
		})
	}
}

// aws-lambda-go's sample that already carries urlDecodedKey: the key is
// decoded from s3.object.key, once, whatever urlDecodedKey said.
func TestS3URLDecodedKeyIsNotDecodedAgain(t *testing.T) {
	router, r := newRouter(t)
	raw := strings.Replace(string(readSample(t, "aws/s3-event-with-decoded.json")), `"urlDecodedKey": "Happy Face.jpg"`, `"urlDecodedKey": "Happy%20Face.jpg"`, 1)
	out, err := router.HandleLambda(context.Background(), json.RawMessage(raw))
	if err != nil {
		t.Fatalf("HandleLambda(s3-event-with-decoded) = %v", err)
	}
	checkResult(t, r, out.(*triggers.Report).Outcomes[0].RunID,
		`{"bucket":"sourcebucket","key":"Happy Face.jpg","raw_key":"Happy%20Face.jpg","subject":"Happy Face.jpg","size":1024}`)
}

// A key that is not URL-encoded as S3 writes keys, or decodes to bytes
// that are not UTF-8, is rejected: nothing starts, nothing is retried.
func TestS3UndecodableKeysAreRejected(t *testing.T) {
	for _, raw := range []string{"bad%ZZescape.txt", "trailing%2", "latin1%E9.txt"} {
		router, r := newRouter(t)
		out, err := router.HandleLambda(context.Background(), s3Event(t, raw))
		if err != nil {
			t.Fatalf("HandleLambda(key %q) = %v, want a report (no retry)", raw, err)
		}
		rep := out.(*triggers.Report)
		if len(rep.Outcomes) != 1 || rep.Outcomes[0].Result != triggers.Rejected || !strings.Contains(rep.Outcomes[0].Reason, "s3.object.key") {
			t.Errorf("HandleLambda(key %q) = %+v, want one rejection naming s3.object.key", raw, rep.Outcomes)
		}
		if runs := r.Runs(t); len(runs) != 0 {
			t.Errorf("key %q started %d runs, want none", raw, len(runs))
		}
	}
}

// Events without a sequencer (tagging, ACL) are identified by event name
// and version ID; without either the record cannot be deduplicated.
func TestS3IdentityWithoutSequencer(t *testing.T) {
	router, r := newRouter(t)
	noSeq := strings.Replace(string(s3Event(t, "a.txt")), `"sequencer": "Happy Sequencer"`, `"sequencer": ""`, 1)
	out, err := router.HandleLambda(context.Background(), json.RawMessage(noSeq))
	if err != nil {
		t.Fatal(err)
	}
	if o := out.(*triggers.Report).Outcomes[0]; o.IdempotencyKey != "trigger/s3-uploads/s3:sourcebucket/ObjectCreated:Put@version/a.txt" {
		t.Errorf("outcome without sequencer = %+v, want the version ID in the key", o)
	}
	neither := strings.Replace(noSeq, `"versionId": "version"`, `"versionId": ""`, 1)
	out, _ = router.HandleLambda(context.Background(), json.RawMessage(neither))
	if o := out.(*triggers.Report).Outcomes; len(o) != 1 || o[0].Result != triggers.Rejected || !strings.Contains(o[0].Reason, "cannot deduplicate") {
		t.Errorf("outcome without sequencer or version = %+v, want a rejection", o)
	}
	if n := len(r.Runs(t)); n != 2 {
		t.Errorf("%d runs, want 2 (s3-uploads and s3-audit of the first event)", n)
	}
}
