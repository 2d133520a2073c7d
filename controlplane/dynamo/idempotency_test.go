package dynamo_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// keyed returns a new run at nowMs with an idempotency key and hash.
func keyed(nowMs int64, key, hash string) *sortie.Run {
	run := controlplanetest.NewRun(nowMs)
	run.IdempotencyKey, run.RequestHash = key, hash
	return run
}

func idemKey(scope, key string) string { return fmt.Sprintf("IDEM#%d#%s#%s", len(scope), scope, key) }

func numberAttr(t *testing.T, it map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	n, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s = %#v, want a number", name, it[name])
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatalf("attribute %s = %q, want an integer: %v", name, n.Value, err)
	}
	return v
}

// The record's expiry is compared in ms against the reservation's ms; the
// seconds attribute exists only for DynamoDB's TTL. With a TTL of 1500 ms
// the seconds value rounds up to T0+2 s, so a comparison that mixed units
// would still see the record at T0+1500 and T0+1999.
func TestIdempotencyExpiryComparedInMs(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	reserve := func(nowMs int64, hash string) (*sortie.Run, bool) {
		t.Helper()
		got, created, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(nowMs, "k", hash), TTLMs: 1500, NowMs: nowMs})
		if err != nil {
			t.Fatalf("Reserve(k, %s) at T0+%d = %v, want success", hash, nowMs-T0, err)
		}
		return got, created
	}
	first, _ := reserve(T0, "a")
	rec := rawItem(t, db, table, idemKey("default", "k"), "IDEM")
	if exp, ttl := numberAttr(t, rec, dynamo.AttrExpires), numberAttr(t, rec, dynamo.AttrTTL); exp != T0+1500 || ttl != (T0+2000)/1000 {
		t.Fatalf("stored record: exp %d ttl %d, want exp %d (ms) and ttl %d (s, rounded up)", exp, ttl, T0+1500, (T0+2000)/1000)
	}
	if got, created := reserve(T0+1499, "a"); created || got.ID != first.ID {
		t.Errorf("Reserve at T0+1499 (1 ms before expiry) = %s created %v, want %s created false", got.ID, created, first.ID)
	}
	_, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0+1499, "k", "b"), TTLMs: 1500, NowMs: T0 + 1499})
	if !errors.Is(err, sortie.ErrIdempotencyConflict) {
		t.Errorf("Reserve(other hash) at T0+1499 = %v, want ErrIdempotencyConflict", err)
	}
	second, created := reserve(T0+1500, "b")
	if !created || second.ID == first.ID {
		t.Errorf("Reserve(other hash) at T0+1500 (the expiry) = %s created %v, want a new run", second.ID, created)
	}
	third, created := reserve(T0+3000, "c")
	if !created || third.ID == second.ID {
		t.Errorf("Reserve(other hash) at T0+3000 (second record's expiry) = %s created %v, want a new run", third.ID, created)
	}
}

// Every duplicate's request hash is compared, also when the duplicate
// carries the same run ID (both conditions fail and both items come back)
// and when the hashes differ only in bytes that are not UTF-8.
func TestDuplicateHashCheckedOnFastPath(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	peer := open(t, newClient(), table, nil)
	ctx := t.Context()
	orig := keyed(T0, "k", "hash-\xff")
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: orig, NowMs: T0}); err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	sameID := orig.Clone()
	sameID.RequestHash = "hash-\xfe"
	otherID := keyed(T0+1, "k", "hash-\xfe")
	for name, tc := range map[string]struct {
		cp  sortie.ControlPlane
		run *sortie.Run
	}{
		"same run ID": {cp, sameID}, "new run ID": {cp, otherID}, "peer, same run ID": {peer, sameID}, "peer, new run ID": {peer, otherID},
	} {
		_, _, err := tc.cp.Reserve(ctx, &sortie.Reservation{Run: tc.run, NowMs: T0 + 5})
		if !errors.Is(err, sortie.ErrIdempotencyConflict) {
			t.Errorf("Reserve(%s, other hash) = %v, want ErrIdempotencyConflict", name, err)
		}
	}
	again := keyed(T0, "k", "hash-\xff") // not Clone: JSON would replace the invalid byte
	again.ID = orig.ID
	got, created, err := peer.Reserve(ctx, &sortie.Reservation{Run: again, NowMs: T0 + 6})
	if err != nil || created || got.ID != orig.ID || got.State != sortie.StateSubmitted {
		t.Errorf("Reserve(same run, same hash) = %v created %v err %v, want run %s, created false", got, created, err, orig.ID)
	}
}

// A refused or answered duplicate changes neither the running attempt's
// claim and lease nor the idempotency record: the transaction is refused
// whole.
func TestRejectedDuplicateKeepsTheLock(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0, "k", "h"), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	lid := sortie.NewLaunchID()
	cp.RecordLaunch(ctx, sortie.Launch{RunID: run.ID, Attempt: 1, LaunchID: lid, NowMs: T0 + 1})
	claim := sortie.Claim{RunID: run.ID, Attempt: 1, LaunchID: lid, Owner: "holder", NowMs: T0 + 2}
	if _, err := cp.Claim(ctx, claim); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	runPK, idemPK := "RUN#"+string(run.ID), idemKey("default", "k")
	runBefore, idemBefore := rawItem(t, db, table, runPK, "RUN"), rawItem(t, db, table, idemPK, "IDEM")
	for i, hash := range []string{"h", "other", "h"} {
		dup := keyed(T0+10, "k", hash)
		if i == 2 {
			dup = run.Clone() // the same run ID: a retried Reserve
		}
		_, created, err := cp.Reserve(ctx, &sortie.Reservation{Run: dup, TTLMs: 1, NowMs: T0 + 10})
		if created || (err != nil && !errors.Is(err, sortie.ErrIdempotencyConflict)) {
			t.Fatalf("duplicate Reserve #%d (hash %s) = created %v err %v, want the existing run or ErrIdempotencyConflict", i, hash, created, err)
		}
		if diff := rawDiff(runBefore, rawItem(t, db, table, runPK, "RUN")); diff != "" {
			t.Errorf("duplicate Reserve #%d changed the run item (-before +after):\n%s", i, diff)
		}
		if diff := rawDiff(idemBefore, rawItem(t, db, table, idemPK, "IDEM")); diff != "" {
			t.Errorf("duplicate Reserve #%d changed the idempotency record (-before +after):\n%s", i, diff)
		}
	}
	claim.NowMs = T0 + 20
	if _, err := cp.Heartbeat(ctx, claim); err != nil {
		t.Errorf("Heartbeat(holder) after duplicates = %v, want success", err)
	}
	claim.Owner = "intruder"
	if _, err := cp.Claim(ctx, claim); !errors.Is(err, sortie.ErrConflict) {
		t.Errorf("Claim(attempt 1 again) after duplicates = %v, want ErrConflict", err)
	}
}

// Timestamps are stored as integers in ms: the lease key, the record's
// expiry, the created key's digits and every *_ms field of the stored run
// body; the TTL attribute alone is in seconds, as DynamoDB's TTL requires.
func TestTimestampsStoredAsIntegerMs(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: keyed(T0, "k", "h"), TTLMs: 60_000, NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	it := rawItem(t, db, table, "RUN#"+string(run.ID), "RUN")
	if lk := numberAttr(t, it, dynamo.AttrLease); lk != run.LeaseExpiresMs {
		t.Errorf("lease key = %d, want %d (the run's LeaseExpiresMs, ms)", lk, run.LeaseExpiresMs)
	}
	ck := it[dynamo.AttrCreated].(*types.AttributeValueMemberS).Value
	if want := fmt.Sprintf("%015d#%s", T0, run.ID); ck != want {
		t.Errorf("created key = %q, want %q", ck, want)
	}
	if exp := numberAttr(t, rawItem(t, db, table, idemKey("default", "k"), "IDEM"), dynamo.AttrExpires); exp != T0+60_000 {
		t.Errorf("record expiry = %d, want %d ms", exp, T0+60_000)
	}
	done, err := lifecycle(ctx, cp, T0+5, 2, false, false)
	if err != nil {
		t.Fatalf("lifecycle = %v", err)
	}
	body := rawItem(t, db, table, "RUN#"+string(done.ID), "RUN")[dynamo.AttrBody].(*types.AttributeValueMemberB).Value
	var stored map[string]any
	if err := dynamo.DecodeBody(body, &stored); err != nil {
		t.Fatalf("decode stored body = %v", err)
	}
	times := checkMs(t, "", stored["run"])
	want := []string{"attempts.claimed_ms", "attempts.ended_ms", "attempts.launched_ms", "created_ms", "updated_ms"}
	if diff := cmp.Diff(want, times); diff != "" {
		t.Errorf("time fields of the stored run (-want +got):\n%s", diff)
	}
}

var timeField = regexp.MustCompile(`^(created|updated|lease_expires|launched|claimed|ended)_ms$`)

// checkMs walks a decoded JSON value: every *_ms field must be an integer,
// and a time field one at or after T0 (Unix ms, not seconds). It returns
// the time fields' paths, sorted.
func checkMs(t *testing.T, path string, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := strings.TrimPrefix(path+"."+k, ".")
			if f, ok := x.(float64); ok && strings.HasSuffix(k, "_ms") {
				if f != float64(int64(f)) || (timeField.MatchString(k) && int64(f) < T0) {
					t.Errorf("stored %s = %v, want an integer (a time in Unix ms)", p, f)
				}
				if timeField.MatchString(k) {
					out = append(out, p)
				}
			}
			out = append(out, checkMs(t, p, x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, checkMs(t, path, x)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Scopes and keys holding '#' or bytes that are not UTF-8 never share a record.
func TestIdempotencyKeysDoNotCollide(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	seen := map[sortie.RunID]bool{}
	for i, sk := range [][2]string{{"a#b", "c"}, {"a", "b#c"}, {"a", "\xff"}, {"a", "\xfe"}, {"a\xff", ""}, {"a", "b"}} {
		if sk[1] == "" {
			sk[1] = "x"
		}
		run := keyed(T0+int64(i), sk[1], "h")
		got, created, err := cp.Reserve(t.Context(), &sortie.Reservation{Run: run, Scope: sk[0], NowMs: T0 + int64(i)})
		if err != nil || !created || seen[got.ID] {
			t.Errorf("Reserve(scope %q, key %q) = %s created %v err %v, want a new run", sk[0], sk[1], got.ID, created, err)
			continue
		}
		seen[got.ID] = true
	}
}
