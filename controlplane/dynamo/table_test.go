package dynamo_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
)

// CreateTable makes the table TableDefinition describes, with TTL on the
// seconds attribute; creating it again reports that it exists.
func TestCreateTableMatchesDefinition(t *testing.T) {
	db, table := newTable(t)
	ctx := t.Context()
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable = %v", err)
	}
	want := dynamo.TableDefinition(table)
	got := out.Table
	opt := cmp.Comparer(func(a, b *string) bool { return aws.ToString(a) == aws.ToString(b) })
	sortDefs := func(d []types.AttributeDefinition) []types.AttributeDefinition {
		d = slices.Clone(d)
		slices.SortFunc(d, func(a, b types.AttributeDefinition) int { return strings.Compare(*a.AttributeName, *b.AttributeName) })
		return d
	}
	if diff := cmp.Diff(sortDefs(want.AttributeDefinitions), sortDefs(got.AttributeDefinitions), opt, cmp.AllowUnexported(types.AttributeDefinition{})); diff != "" {
		t.Errorf("attribute definitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.KeySchema, got.KeySchema, opt, cmp.AllowUnexported(types.KeySchemaElement{})); diff != "" {
		t.Errorf("key schema (-want +got):\n%s", diff)
	}
	var idx []string
	for _, g := range got.GlobalSecondaryIndexes {
		idx = append(idx, *g.IndexName+":"+string(g.Projection.ProjectionType)+":"+*g.KeySchema[0].AttributeName+"/"+*g.KeySchema[1].AttributeName)
	}
	slices.Sort(idx)
	wantIdx := []string{"context:KEYS_ONLY:cx/ck", "ended:KEYS_ONLY:ep/ek", "lease:KEYS_ONLY:ls/lk", "list:KEYS_ONLY:lp/ck", "push:KEYS_ONLY:pp/pd", "state:KEYS_ONLY:sp/ck"}
	if diff := cmp.Diff(wantIdx, idx); diff != "" {
		t.Errorf("global secondary indexes (-want +got):\n%s", diff)
	}
	if s := got.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeKeysOnly {
		t.Errorf("stream specification = %+v, want a stream of keys", s)
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != dynamo.AttrTTL {
		t.Errorf("DescribeTimeToLive = %+v, %v, want TTL on %q", ttl, err, dynamo.AttrTTL)
	}
	err = dynamo.CreateTable(ctx, db, table)
	if !dynamo.IsTableExists(err) {
		t.Errorf("CreateTable(%s) again = %v, want an error IsTableExists recognises", table, err)
	}
}

// Service errors map to sentinels once and keep the SDK's type reachable.
func TestErrorsKeepSDKTypes(t *testing.T) {
	db, table := newTable(t)
	cp := open(t, db, table, nil)
	ctx := t.Context()
	run := keyed(T0, "", "")
	if _, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0}); err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	_, _, err := cp.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0})
	var ccf *types.ConditionalCheckFailedException
	if !errors.Is(err, sortie.ErrConflict) || !errors.As(err, &ccf) {
		t.Errorf("Reserve(taken run ID, no key) = %v, want ErrConflict wrapping *types.ConditionalCheckFailedException", err)
	}
	missing := open(t, db, "sortie-no-such-table", nil)
	_, err = missing.Get(ctx, run.ID)
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) || errors.Is(err, sortie.ErrNotFound) {
		t.Errorf("Get on a missing table = %v, want *types.ResourceNotFoundException, not ErrNotFound", err)
	}
	if _, err := dynamo.New(db, "x", nil); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("New(table %q) = %v, want ErrInvalidArgument", "x", err)
	}
}

// Page tokens are signed: a token is refused by a handle with another key
// and by another query, and accepted by a handle sharing the key.
func TestPageTokensAreSigned(t *testing.T) {
	db, table := newTable(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := open(t, db, table, &dynamo.Options{PageTokenKey: key})
	b := open(t, newClient(), table, &dynamo.Options{PageTokenKey: key})
	other := open(t, newClient(), table, nil)
	ctx := t.Context()
	for i := range 3 {
		run := keyed(T0+int64(i), "", "")
		run.ContextID = "ctx-a"
		a.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: T0 + int64(i)})
	}
	page, err := a.List(ctx, sortie.ListQuery{ContextID: "ctx-a", PageSize: 2})
	if err != nil || page.NextPageToken == "" {
		t.Fatalf("List(ctx-a, 2) = %v, %v, want a next page token", page, err)
	}
	next, err := b.List(ctx, sortie.ListQuery{ContextID: "ctx-a", PageSize: 2, PageToken: page.NextPageToken})
	if err != nil || len(next.Runs) != 1 {
		t.Errorf("List(page 2) on a handle sharing the key = %v, %v, want the last run", next, err)
	}
	for name, tc := range map[string]struct {
		cp sortie.ControlPlane
		q  sortie.ListQuery
	}{
		"another key":     {other, sortie.ListQuery{ContextID: "ctx-a", PageSize: 2, PageToken: page.NextPageToken}},
		"another context": {b, sortie.ListQuery{ContextID: "ctx-b", PageSize: 2, PageToken: page.NextPageToken}},
		"another state":   {b, sortie.ListQuery{ContextID: "ctx-a", State: sortie.StateWorking, PageToken: page.NextPageToken}},
		"edited position": {b, sortie.ListQuery{ContextID: "ctx-a", PageToken: "x" + page.NextPageToken[1:]}},
	} {
		_, err := tc.cp.List(ctx, tc.q)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "page_token" {
			t.Errorf("List(token, %s) = %v, want a ValidationError naming page_token", name, err)
		}
	}
}
