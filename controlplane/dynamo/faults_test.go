package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// faultAPI is the real client with faults DynamoDB Local never shows:
// lost conditions without the item that won (aws-sdk-go-v2#2600 shows
// TransactionCanceledException without CancellationReasons' Item), and
// transient failures of writes, before they are applied (throttling, a
// transaction conflict) or after (an internal error whose write was
// applied: the answer is lost).
type faultAPI struct {
	*dynamodb.Client
	stripItem bool
	// fail says, for the n-th write (from 1), "" to pass it, "before" or "after".
	fail func(n int) string

	mu     sync.Mutex
	writes int
	faults map[string]int
}

func (f *faultAPI) fault() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.fail == nil {
		return ""
	}
	kind := f.fail(f.writes)
	if kind != "" {
		if f.faults == nil {
			f.faults = map[string]int{}
		}
		f.faults[kind]++
	}
	return kind
}

// write runs one write with the fault the schedule says; transaction
// tells which error a "before" fault is (a transaction conflict for
// TransactWriteItems, throttling otherwise).
func write[T any](f *faultAPI, transaction bool, call func() (T, error)) (T, error) {
	var zero T
	switch f.fault() {
	case "before":
		if transaction {
			return zero, &types.TransactionCanceledException{Message: aws.String("injected"),
				CancellationReasons: []types.CancellationReason{{Code: aws.String("TransactionConflict")}}}
		}
		return zero, &types.ThrottlingException{Message: aws.String("injected: rate exceeded")}
	case "after":
		if _, err := call(); err != nil {
			return zero, f.strip(err)
		}
		return zero, &types.InternalServerError{Message: aws.String("injected: applied, answer lost")}
	}
	out, err := call()
	return out, f.strip(err)
}

// strip removes the items a lost condition carries, when asked to.
func (f *faultAPI) strip(err error) error {
	if !f.stripItem {
		return err
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i := range tce.CancellationReasons {
			tce.CancellationReasons[i].Item = nil
		}
	}
	return err
}

func (f *faultAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return write(f, false, func() (*dynamodb.PutItemOutput, error) { return f.Client.PutItem(ctx, in, o...) })
}

func (f *faultAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return write(f, false, func() (*dynamodb.UpdateItemOutput, error) { return f.Client.UpdateItem(ctx, in, o...) })
}

func (f *faultAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return write(f, false, func() (*dynamodb.DeleteItemOutput, error) { return f.Client.DeleteItem(ctx, in, o...) })
}

func (f *faultAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return write(f, true, func() (*dynamodb.TransactWriteItemsOutput, error) { return f.Client.TransactWriteItems(ctx, in, o...) })
}

// A duplicate Reserve is answered right when the lost condition carries
// no item: the record is read strongly consistent, its hash compared (a
// different request is ErrIdempotencyConflict, the same one gets the
// existing run), and each such read is counted. Lost conditions of other
// writes fall back the same way.
func TestLostConditionWithoutItem(t *testing.T) {
	metricsBefore := metricCounts(t)
	db, table := newTable(t)
	f := &faultAPI{Client: db, stripItem: true}
	cp := open(t, f, table, nil)
	peer := open(t, &faultAPI{Client: newClient(), stripItem: true}, table, nil)
	ctx := t.Context()
	first, created, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0, "k", "h1"), NowMs: T0, LaunchID: "l1"})
	if err != nil || !created {
		t.Fatalf("Reserve = created %v, %v", created, err)
	}
	for name, c := range map[string]*dynamo.ControlPlane{"same handle": cp, "peer": peer} {
		got, created, err := c.Reserve(ctx, &sortie.Reservation{Run: keyed(T0+1, "k", "h1"), NowMs: T0 + 1})
		if err != nil || created || got.ID != first.ID {
			t.Errorf("%s: Reserve(duplicate, same hash, no item in the lost condition) = %v created %v err %v, want run %s created false",
				name, ids([]*sortie.Run{got}), created, err, first.ID)
		}
		_, _, err = c.Reserve(ctx, &sortie.Reservation{Run: keyed(T0+2, "k", "h2"), NowMs: T0 + 2})
		if !errors.Is(err, sortie.ErrIdempotencyConflict) {
			t.Errorf("%s: Reserve(duplicate, other hash, no item in the lost condition) = %v, want ErrIdempotencyConflict", name, err)
		}
	}
	// The peer reads the run, the first handle then writes from its stale
	// copy: the heartbeat's lost condition has no item either.
	if _, err := peer.Claim(ctx, sortie.Claim{RunID: first.ID, Attempt: 1, LaunchID: "l1", Owner: "w", NowMs: T0 + 3}); err != nil {
		t.Fatalf("peer Claim = %v", err)
	}
	if _, err := cp.RequestCancel(ctx, first.ID, "stop"); err != nil {
		t.Fatalf("RequestCancel = %v", err)
	}
	run, err := peer.Heartbeat(ctx, sortie.Claim{RunID: first.ID, Attempt: 1, LaunchID: "l1", Owner: "w", NowMs: T0 + 4})
	if err != nil || !run.CancelRequested {
		t.Errorf("peer Heartbeat from a stale copy = %v, %v, want the cancel request seen", stateOf(run), err)
	}
	if n := cp.Consumed().ConsistentReads + peer.Consumed().ConsistentReads; n < 4 {
		t.Errorf("consistent reads after lost conditions without items = %d, want at least 4 (two duplicates per handle, the heartbeat)", n)
	}
	if got, want := metricsSince(t, metricsBefore)[dynamo.MetricFallbackReads+" "], cp.Consumed().ConsistentReads+peer.Consumed().ConsistentReads; got != want {
		t.Errorf("metric %s = %d, want %d (the handles' ConsistentReads)", dynamo.MetricFallbackReads, got, want)
	}
}

// Transient failures of writes, before they are applied and after (the
// answer lost), are retried with backoff and counted, and every run ends
// once with each event stored once: a write applied by a try whose answer
// was lost is recognised as this call's own.
func TestTransientWriteFaults(t *testing.T) {
	metricsBefore := metricCounts(t)
	db, table := newTable(t)
	f := &faultAPI{Client: db, fail: func(n int) string {
		switch n % 5 {
		case 1:
			return "before"
		case 3:
			return "after"
		}
		return ""
	}}
	cp := open(t, f, table, nil)
	ctx := t.Context()
	for i := range 12 {
		keyedRun := i%2 == 0
		run, err := lifecycle(ctx, cp, T0+int64(i), 3, keyedRun, i%3 == 0)
		if err != nil {
			t.Fatalf("run %d lifecycle with faults = %v", i, err)
		}
		if run.State != sortie.StateCompleted || run.Version != 4 || string(run.Result) != `{"words":42}` {
			t.Errorf("run %d = %s, want completed at version 4 (each change stored once)", i, stateOf(run))
		}
		evs, err := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
		var got []string
		for _, e := range evs {
			got = append(got, fmt.Sprint(e.Seq, " ", e.Text))
		}
		if want := "[1 step 1 of 3 2 step 2 of 3 3 step 3 of 3]"; err != nil || fmt.Sprint(got) != want {
			t.Errorf("run %d events = %v, %v, want %s", i, got, err, want)
		}
		if keyedRun {
			dup, created, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0+100, run.IdempotencyKey, run.RequestHash), NowMs: T0 + 100})
			if err != nil || created || dup.ID != run.ID {
				t.Errorf("run %d duplicate Reserve = created %v err %v, want the run", i, created, err)
			}
		}
	}
	if _, err := cp.PutPushConfig(ctx, &sortie.PushConfig{RunID: mustRun(t, cp).ID, ID: "hook", URL: "https://example.com/h"}, T0); err != nil {
		t.Fatalf("PutPushConfig with faults = %v", err)
	}
	c := cp.Consumed()
	t.Logf("faults %v, consumed %+v", f.faults, c)
	if c.Retries == 0 || c.Throttles == 0 || c.TransactionConflicts == 0 || f.faults["after"] == 0 {
		t.Errorf("Consumed after injected faults %v = retries %d, throttles %d, transaction conflicts %d; want each counted",
			f.faults, c.Retries, c.Throttles, c.TransactionConflicts)
	}
	m, r := metricsSince(t, metricsBefore), dynamo.MetricRetries
	if m[r+" throttled"]+m[r+" transaction_conflict"]+m[r+" other"] != c.Retries || m[r+" throttled"] != c.Throttles || m[r+" transaction_conflict"] != c.TransactionConflicts ||
		m[r+" other"] != c.Retries-c.Throttles-c.TransactionConflicts {
		t.Errorf("metric %s = %v, want the handle's counts %+v by cause", r, m, c)
	}
}

// mustRun reserves a run without a key.
func mustRun(t *testing.T, cp *dynamo.ControlPlane) *sortie.Run {
	t.Helper()
	run, _, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: keyed(T0, "", ""), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	return run
}
