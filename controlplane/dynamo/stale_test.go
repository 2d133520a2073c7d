package dynamo_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// hooked is the real client with a hook run before a PutItem: it lets a
// test act between a worker's claim check and its event put.
type hooked struct {
	*dynamodb.Client
	beforePut func()
}

func (h *hooked) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f := h.beforePut; f != nil {
		h.beforePut = nil
		f()
	}
	return h.Client.PutItem(ctx, in, opts...)
}

// working reserves a run, launches and claims attempt 1 through cp.
func working(t *testing.T, cp sortie.ControlPlane) (*sortie.Run, string) {
	t.Helper()
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0, "", ""), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	lid := sortie.NewLaunchID()
	if _, err := cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 1}); err != nil {
		t.Fatalf("RecordLaunch = %v", err)
	}
	run, err = cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "w", NowMs: T0 + 2})
	if err != nil {
		t.Fatalf("Claim = %v", err)
	}
	return run, lid
}

// A worker whose attempt ends between its claim check and its event put
// (another process's reconciler finished it): the append reads the run no
// second time, so its batch is stored, but it never becomes part of the
// run, and the worker's next heartbeat tells it the run ended.
func TestStaleAppendAfterAttemptEnded(t *testing.T) {
	db, table := newTable(t)
	h := &hooked{Client: db}
	worker := open(t, h, table, nil)
	reconciler := open(t, newClient(), table, nil)
	ctx := t.Context()
	run, lid := working(t, worker)
	if _, err := worker.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Events: []sortie.Event{{Kind: "kept"}}}); err != nil {
		t.Fatalf("AppendEvents(live) = %v", err)
	}
	h.beforePut = func() {
		_, err := reconciler.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 50,
			Outcome: sortie.Outcome{Error: &sortie.ErrorMessage{Type: sortie.ErrorTypeLeaseExpired, Message: "lease expired"}}})
		if err != nil {
			t.Errorf("reconciler Finish = %v", err)
		}
	}
	if _, err := worker.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid,
		Events: []sortie.Event{{Kind: "stale"}, {Kind: "stale"}}}); err != nil {
		t.Errorf("AppendEvents(attempt ended after the claim check) = %v, want the batch stored unseen", err)
	}
	for name, cp := range map[string]*dynamo.ControlPlane{"reconciler": reconciler, "worker": worker} {
		evs, err := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
		if err != nil || len(evs) != 1 || evs[0].Kind != "kept" {
			t.Errorf("%s Events after a stale append = %v, %v, want only the event stored while the attempt was live", name, evs, err)
		}
	}
	_, err := worker.Heartbeat(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "w", NowMs: T0 + 60})
	if !errors.Is(err, sortie.ErrTerminal) {
		t.Errorf("worker Heartbeat after its attempt ended = %v, want ErrTerminal (the run failed)", err)
	}
	_, err = worker.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: []sortie.Event{{Kind: "later"}}})
	if !errors.Is(err, sortie.ErrTerminal) {
		t.Errorf("AppendEvents after the heartbeat showed the end = %v, want ErrTerminal", err)
	}
}

// A batch that a stale worker stored after its attempt ended and could not
// delete (it died) is never returned by Events.
func TestEventsHideBatchesStoredAfterTheEnd(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, lid := working(t, cp)
	cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: []sortie.Event{{Kind: "a"}, {Kind: "b"}}})
	if _, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: lid, Outcome: sortie.Outcome{Result: json.RawMessage(`1`)}, NowMs: T0 + 9}); err != nil {
		t.Fatalf("Finish = %v", err)
	}
	want, _ := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
	orphan := []sortie.Event{{Attempt: 1, Seq: 3, Kind: "orphan"}}
	body, _ := json.Marshal(orphan)
	stored := storeRaw(t, db, table, run.ID, "EVT#0001#0000000003", body)
	if !stored {
		t.Fatal("could not store the orphan batch")
	}
	got, err := cp.Events(ctx, run.ID, sortie.Cursor{}, 0)
	if err != nil {
		t.Fatalf("Events = %v", err)
	}
	if diff := cmp.Diff(cursorsOf(want), cursorsOf(got)); diff != "" || len(got) != 2 {
		t.Errorf("Events with a batch stored after the attempt ended (-want +got):\n%s", diff)
	}
}

// storeRaw stores an event batch item as a stale worker of an older build
// would: the JSON body compressed the way the package stores it.
func storeRaw(t *testing.T, db *dynamodb.Client, table string, id sortie.RunID, sk string, js []byte) bool {
	t.Helper()
	body, err := dynamo.EncodeBody(json.RawMessage(js))
	if err != nil {
		t.Fatalf("encode = %v", err)
	}
	_, err = db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "RUN#" + string(id)}, "sk": &types.AttributeValueMemberS{Value: sk},
		"b": &types.AttributeValueMemberB{Value: body}}})
	return err == nil
}

func cursorsOf(evs []sortie.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Cursor().String()+" "+e.Kind)
	}
	return out
}

// Events too large for one item are split into several batch items, stored
// in one transaction, and read back whole and in order.
func TestLargeAppendSplitsIntoBatches(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, lid := working(t, cp)
	data := json.RawMessage(`"` + strings.Repeat("x", sortie.MaxEventDataBytes-10) + `"`)
	evs := make([]sortie.Event, 12) // 12 × ~64 KB: three batch items
	for i := range evs {
		evs[i] = sortie.Event{Kind: "big", Data: data, Text: strings.Repeat("y", i)}
	}
	if _, err := cp.AppendEvents(ctx, sortie.Append{RunID: run.ID, Attempt: 1, LaunchID: lid, Events: evs}); err != nil {
		t.Fatalf("AppendEvents(12 events of 64 KB) = %v, want success", err)
	}
	got, err := cp.Events(ctx, run.ID, sortie.Cursor{Attempt: 1, Seq: 4}, 0)
	if err != nil || len(got) != 8 {
		t.Fatalf("Events(after 1.4) = %d events, %v, want 8", len(got), err)
	}
	for i, e := range got {
		if e.Seq != int64(i+5) || e.Text != strings.Repeat("y", i+4) || string(e.Data) != string(data) {
			t.Errorf("Events()[%d] = seq %d text %d bytes, want seq %d with its own text and data", i, e.Seq, len(e.Text), i+5)
		}
	}
}

// noise returns n random printable ASCII characters (no quote or
// backslash), which compress little.
func noise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = ' ' + b[i]%93
		if b[i] == '"' || b[i] == '\\' {
			b[i] = '~'
		}
	}
	return string(b)
}

// A client's change that would make a run exceed DynamoDB's 400 KB item
// limit (here a resume input on full variables) is refused as bad input
// naming the limit, and nothing stored changes. (A worker's outcome that
// would not fit ends the attempt instead: controlplanetest's
// FinishOutputTooLarge.)
func TestOversizeResumeRefused(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	big := keyed(T0, "", "")
	big.Variables = json.RawMessage(`{"v":"` + noise(sortie.MaxVariablesBytes-20) + `"}`)
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: big, NowMs: T0, LaunchID: "l1"})
	if err != nil {
		t.Fatalf("Reserve(256 KB of variables) = %v, want success (it fits)", err)
	}
	cp.Claim(ctx, sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: "l1", Owner: "w", NowMs: T0})
	before, err := cp.Finish(ctx, sortie.Finish{RunID: run.ID, Attempt: 1, LaunchID: "l1", NowMs: T0 + 1,
		Outcome: sortie.Outcome{Interrupt: &sortie.Interrupt{State: sortie.StateInputRequired, Prompt: "more"}}})
	if err != nil || before.State != sortie.StateInputRequired {
		t.Fatalf("Finish(interrupt) = %s, %v, want input-required", stateOf(before), err)
	}
	input := json.RawMessage(`{"v":"` + noise(sortie.MaxVariablesBytes-20) + `"}`)
	_, err = cp.Resume(ctx, run.ID, input)
	if !errors.Is(err, sortie.ErrInvalidArgument) || !strings.Contains(err.Error(), "400 KB") {
		t.Fatalf("Resume(256 KB input on 256 KB of variables) = %v, want ErrInvalidArgument naming the 400 KB limit", err)
	}
	if after, _ := cp.Get(ctx, run.ID); after.Version != before.Version || after.State != sortie.StateInputRequired {
		t.Errorf("Get after the refused Resume = %s, want the run unchanged at version %d", stateOf(after), before.Version)
	}
}
