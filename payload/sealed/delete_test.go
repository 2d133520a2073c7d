package sealed_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload"
	"github.com/sortie-run/sortie/payload/s3presign"
	"github.com/sortie-run/sortie/payload/sealed"
)

// presigner signs for the bucket at bucketURL with the rig's dummy
// credentials, as the Lambda reconciler signs with its role's.
func presigner(t *testing.T, bucketURL string) *s3presign.Signer {
	t.Helper()
	s, err := s3presign.New(bucketURL, credentials.NewStaticCredentialsProvider("AKIDPAYLOADTEST", "payload-test-secret", "token"), nil)
	if err != nil {
		t.Fatalf("s3presign.New = %v", err)
	}
	return s
}

// storedRun is a terminal run of two attempts whose variables, attempt
// 2's result, resume input and step result are stored in r's bucket, and
// which references an object of another store too; with its steps.
func (r *rig) storedRun(t *testing.T) (*sortie.Run, []sortie.Step) {
	t.Helper()
	id := sortie.NewRunID(time.Now())
	put := func(name string) *sortie.PayloadRef {
		ref, err := r.store.Put(t.Context(), id, "probe", name, "value", bigValue(300<<10))
		if err != nil {
			t.Fatalf("Put(%s) = %v", name, err)
		}
		return ref
	}
	run := &sortie.Run{ID: id, State: sortie.StateCompleted, Attempts: []sortie.Attempt{{Number: 1}, {Number: 2}},
		VariablesRef: put("variables"), ResultRef: put("result-2"), ResumeInputRef: put("resume-input-2-abcdefghij")}
	put("checkpoint-1")                   // written by attempt 1, never recorded
	put(sortie.StepSlotPayloadName(2, 3)) // a step slot attempt 2 wrote, its step never recorded
	elsewhere := *run.VariablesRef
	elsewhere.Store = "s3://elsewhere"
	elsewhere.Key = payload.Key(id, "elsewhere")
	steps := []sortie.Step{{Name: "fetch", ResultRef: put(sortie.StepPayloadName("fetch", 1))}, {Name: "inline"}, {Name: "moved", ResultRef: &elsewhere}}
	return run, steps
}

// A Deleter signing DELETE URLs (no storage client, no listing) deletes
// every object of the run it can name: the ones the run and its steps
// reference, and result-N, checkpoint-N and the step slots of each
// attempt (one of them written but never recorded), attempt 1's
// result being missing (a success). It keeps another run's object and
// names nothing outside the run's own objects in the store.
func TestDeleterDeletesTheRunsObjects(t *testing.T) {
	r := newRig(t)
	other := sortie.NewRunID(time.Now())
	if _, err := r.store.Put(t.Context(), other, "probe", "variables", "variables", bigValue(1<<10)); err != nil {
		t.Fatal(err)
	}
	run, steps := r.storedRun(t)
	s := presigner(t, r.srv.SigningBlobURL())
	want := []string{"checkpoint-1", "checkpoint-2", "resume-input-2-abcdefghij", "result-1", "result-2", sortie.StepPayloadName("fetch", 1), "variables"}
	for n := 1; n <= 2; n++ {
		for k := range sortie.MaxStepSlots {
			want = append(want, sortie.StepSlotPayloadName(n, k))
		}
	}
	for i, name := range want {
		want[i] = payload.Key(run.ID, name)
	}
	slices.Sort(want)
	if got := sealed.RunKeys(s.Name(), run, steps); !slices.Equal(got, want) {
		t.Fatalf("RunKeys =\n  %q\nwant\n  %q", got, want)
	}
	if err := sealed.NewDeleter(s, nil).DeleteRunObjects(t.Context(), run, steps); err != nil {
		t.Fatalf("DeleteRunObjects = %v", err)
	}
	left := r.srv.Objects(t)
	if _, ok := left[payload.Key(other, "variables")]; !ok || len(left) != 1 {
		t.Errorf("the bucket holds %q after DeleteRunObjects, want only the other run's variables", slices.Sorted(maps.Keys(left)))
	}
}

// A DELETE the store refuses (403) fails that key only: the Deleter
// goes on with the others and its error names the key, never the URL.
func TestDeleterGoesOnPastAFailure(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		if strings.HasSuffix(req.URL.Path, "/result-1") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := presigner(t, "s3://payloads?region=us-east-1&use_path_style=true&endpoint="+srv.URL)
	run := &sortie.Run{ID: sortie.NewRunID(time.Now()), State: sortie.StateFailed, Attempts: []sortie.Attempt{{Number: 1}, {Number: 2}}}
	err := sealed.NewDeleter(s, nil).DeleteRunObjects(t.Context(), run, nil)
	key := payload.Key(run.ID, "result-1")
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "X-Amz") {
		t.Errorf("DeleteRunObjects(result-1 refused) = %v, want an error naming %s and HTTP 403, without a URL", err, key)
	}
	if n, want := calls.Load(), int32(2*(2+sortie.MaxStepSlots)); n != want {
		t.Errorf("the store got %d DELETEs, want %d: result, checkpoint and step slots of attempts 1 and 2, past the refusal", n, want)
	}
}
