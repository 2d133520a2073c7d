package dynamo_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// TestPushCapacity measures, with what DynamoDB Local reports through
// ReturnConsumedCapacity, the write units of each push configuration call
// on a configuration of about 150 bytes, and checks them against the
// costs the package documents. DeletePushConfig is only logged: DynamoDB
// Local reports 2 units for its transaction of a delete and an update,
// where DynamoDB bills 4 (two items, doubled).
func TestPushCapacity(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(T0), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	cfg := &sortie.PushConfig{RunID: run.ID, ID: "ops-hook", URL: "https://hooks.example.com/sortie/" + strings.Repeat("x", 40)}
	steps := []struct {
		name      string
		call      func() error
		wru, iwru float64
	}{
		{"PutPushConfig(new)", func() error { _, err := cp.PutPushConfig(ctx, cfg, T0+1); return err }, 6, 2},
		{"PutPushConfig(replace)", func() error { _, err := cp.PutPushConfig(ctx, cfg, T0+2); return err }, 1, 0},
		{"UpdatePushDelivery(delivered, same NextAttemptMs)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 1})
		}, 1, 0},
		{"UpdatePushDelivery(failed, retry later)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 1, Failures: 1, NextAttemptMs: T0 + 500, LastError: "HTTP 503"})
		}, 3, 2},
		{"UpdatePushDelivery(stale version)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{NextAttemptMs: T0 + 500})
		}, 2, 0},
		{"UpdatePushDelivery(done)", func() error {
			return cp.UpdatePushDelivery(ctx, run.ID, cfg.ID, sortie.PushDelivery{DeliveredVersion: 2, NextAttemptMs: T0 + 500, Done: true})
		}, 2, 1},
		{"DeletePushConfig(done)", func() error { return cp.DeletePushConfig(ctx, run.ID, cfg.ID) }, -1, -1},
	}
	for _, s := range steps {
		before := cp.Consumed()
		if err := s.call(); err != nil {
			t.Fatalf("%s = %v, want success", s.name, err)
		}
		after := cp.Consumed()
		wru, iwru, rru := after.WriteUnits-before.WriteUnits, after.IndexWriteUnits-before.IndexWriteUnits, after.ReadUnits-before.ReadUnits
		t.Logf("%s: %v WRU (%v index), %v RRU, %d requests", s.name, wru, iwru, rru, after.Requests-before.Requests)
		if s.wru >= 0 && (wru != s.wru || iwru != s.iwru) {
			t.Errorf("%s consumed %v write units (%v for indexes), want %v (%v)", s.name, wru, iwru, s.wru, s.iwru)
		}
	}
}

// TestPendingPushTokensAreSigned shows PendingPushConfigs page tokens
// signed per handle key: a token continues on a handle with the same
// PageTokenKey, and one of a handle with another key, a well-formed
// position without a signature, or one with another position's signature
// is refused with a ValidationError of page_token.
func TestPendingPushTokensAreSigned(t *testing.T) {
	db, table := newTable(t)
	key := []byte("a shared 32-byte page token key!")
	a := open(t, db, table, &dynamo.Options{PageTokenKey: key})
	b := open(t, newClient(), table, &dynamo.Options{PageTokenKey: key})
	other := open(t, newClient(), table, nil)
	ctx := t.Context()
	run, _, err := a.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(T0), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	for i := range 3 {
		cfg := &sortie.PushConfig{RunID: run.ID, ID: fmt.Sprintf("hook-%d", i), URL: "https://hooks.example.com/in"}
		if _, err := a.PutPushConfig(ctx, cfg, T0+1); err != nil {
			t.Fatalf("PutPushConfig(%s) = %v", cfg.ID, err)
		}
	}
	first, token, err := a.PendingPushConfigs(ctx, T0+2, 1, "")
	if err != nil || len(first) != 1 || token == "" {
		t.Fatalf("PendingPushConfigs(limit 1 of 3) = %d configs, next %q, %v; want 1 and a next page", len(first), token, err)
	}
	rest, next, err := b.PendingPushConfigs(ctx, T0+2, 10, token)
	if err != nil || len(rest) != 2 || next != "" || rest[0].ID == first[0].ID || rest[1].ID == first[0].ID {
		t.Errorf("PendingPushConfigs(a's token) on a handle with the same key = %d configs, next %q, %v; want the other 2 and no next page", len(rest), next, err)
	}
	pos, sig, _ := strings.Cut(token, ".")
	otherID := "hook-0" // a position other than the token's own
	if first[0].ID == otherID {
		otherID = "hook-1"
	}
	unsigned := controlplane.PushPosition{RunID: run.ID, ID: otherID}.Encode()
	refused := map[string]struct {
		cp    *dynamo.ControlPlane
		token string
	}{
		"a token of a handle with another key": {other, token},
		"a well-formed position, unsigned":     {a, unsigned},
		"a position with another's signature":  {a, unsigned + "." + sig},
		"the position without its signature":   {a, pos},
	}
	for name, tc := range refused {
		_, _, err := tc.cp.PendingPushConfigs(ctx, T0+2, 10, tc.token)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "page_token" {
			t.Errorf("PendingPushConfigs(%s) = %v, want a ValidationError of page_token", name, err)
		}
	}
}

// TestPushFormatAndTokenAttributes reads a push configuration's item
// straight from the table: the format is a string attribute and the
// sealed token a binary one holding the bytes as given, and a replacement
// without them removes both attributes (an empty field is never stored).
func TestPushFormatAndTokenAttributes(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: controlplanetest.NewRun(T0), NowMs: T0})
	if err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	tok := []byte(`{"v": 1, "ct": "c2VhbGVk"}`)
	cfg := &sortie.PushConfig{RunID: run.ID, ID: "hook", URL: "https://hooks.example.com/in", Format: sortie.PushFormatA2A, SealedToken: tok}
	item := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				dynamo.AttrPK: &types.AttributeValueMemberS{Value: "RUN#" + string(run.ID)},
				dynamo.AttrSK: &types.AttributeValueMemberS{Value: "PUSH#hook"},
			}})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("GetItem(push config hook) = %d attributes, %v; want the item", len(out.Item), err)
		}
		return out.Item
	}
	for _, step := range []string{"new", "replacement"} {
		if _, err := cp.PutPushConfig(ctx, cfg, T0+1); err != nil {
			t.Fatalf("PutPushConfig(%s, format and token) = %v", step, err)
		}
		it := item()
		if f, ok := it[dynamo.AttrFormat].(*types.AttributeValueMemberS); !ok || f.Value != sortie.PushFormatA2A {
			t.Errorf("%s item: %s = %#v, want the string %q", step, dynamo.AttrFormat, it[dynamo.AttrFormat], sortie.PushFormatA2A)
		}
		if b, ok := it[dynamo.AttrSealedToken].(*types.AttributeValueMemberB); !ok || string(b.Value) != string(tok) {
			t.Errorf("%s item: %s = %#v, want the bytes %s", step, dynamo.AttrSealedToken, it[dynamo.AttrSealedToken], tok)
		}
	}
	cfg.Format, cfg.SealedToken = "", nil
	if _, err := cp.PutPushConfig(ctx, cfg, T0+2); err != nil {
		t.Fatalf("PutPushConfig(replacement without format and token) = %v", err)
	}
	it := item()
	for _, a := range []string{dynamo.AttrFormat, dynamo.AttrSealedToken} {
		if v, ok := it[a]; ok {
			t.Errorf("item after a replacement without format and token has %s = %#v, want no such attribute", a, v)
		}
	}
}
