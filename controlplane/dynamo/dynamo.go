package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// API is the part of the DynamoDB client the control plane uses;
// *dynamodb.Client implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Options configures [New]. A nil *Options means the defaults.
type Options struct {
	// PageTokenKey signs the page tokens of List and PendingPushConfigs
	// (HMAC-SHA256, see [controlplane.PageTokens]), so a client can neither
	// forge a position nor carry a token to another deployment: at least
	// 16 bytes, the same in every process of a deployment (hosts get it
	// from SORTIE_PAGE_TOKEN_KEY or a KMS-sealed copy; terraform/aws makes
	// one). Optional; defaults to 32 random bytes per handle, and then a
	// token is only good on the handle that made it: required when more
	// than one process serves lists.
	PageTokenKey []byte
	// Now stamps changes that carry no time of their own (RequestCancel,
	// Resume, SetRef). Optional; defaults to time.Now.
	Now func() time.Time
	// Liveness is the client of the calls that keep attempts alive (a
	// worker's claims, heartbeats, events and finishes: contexts marked by
	// sortie.LivenessContext), with a retry budget of its own, so a burst
	// of throttled submissions never spends it (host/awshost gives it a
	// retryer without a client-side retry quota). Optional; defaults to
	// the one client of New.
	Liveness API
	// MaxInFlight bounds the calls other than Liveness's in flight at once
	// (the others wait their turn), so DynamoDB never queues more than
	// that many ahead of a heartbeat. Optional, with Liveness only;
	// defaults to no bound.
	MaxInFlight int
	// MaxTries bounds the tries of one call that keeps losing conditional
	// writes to other writers (each loss means another writer made
	// progress). Optional; defaults to 100.
	MaxTries int
}

// ControlPlane is a [sortie.ControlPlane] on one DynamoDB table laid out as
// [TableDefinition] describes. Make it with [New]; it is safe for
// concurrent use, and any number of handles, in any number of processes,
// may share the table.
type ControlPlane struct {
	db       API
	table    string
	tokens   *controlplane.PageTokens
	now      func() time.Time
	maxTries int
	units    ledger
	cache    runCache
	control  control
	hub      controlplane.Hub
	closed   atomic.Bool

	// Changes gives the state-changing methods (RecordLaunch, SetRef,
	// Claim, Heartbeat, Finish, RequestCancel, Resume) over c.change.
	controlplane.Changes
}

var (
	_ sortie.ControlPlane = (*ControlPlane)(nil)
	_ sortie.Notifier     = (*ControlPlane)(nil)
)

// New returns a control plane on table through db. The table must exist
// (see [CreateTable]); New makes no request. It returns a
// [*sortie.ValidationError] for an empty table name or bad options.
func New(db API, table string, opts *Options) (*ControlPlane, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case db == nil:
		return nil, sortie.Invalidf("client", "a DynamoDB client is required")
	case len(table) < 3 || len(table) > 255:
		return nil, sortie.Invalidf("table", "%q must be 3-255 characters", table)
	case o.MaxInFlight < 0:
		return nil, sortie.Invalidf("max_in_flight", "%d is negative", o.MaxInFlight)
	case o.MaxTries < 0:
		return nil, sortie.Invalidf("max_tries", "%d is negative", o.MaxTries)
	}
	tokens, err := controlplane.NewPageTokens(o.PageTokenKey)
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{table: table, tokens: tokens, now: o.Now, maxTries: o.MaxTries}
	var api API = db
	if o.Liveness != nil {
		p := byPriority{normal: db, liveness: o.Liveness}
		if o.MaxInFlight > 0 {
			p.slots = make(chan struct{}, o.MaxInFlight)
		}
		api = p
	}
	c.db = retryAPI{API: api, units: &c.units}
	if c.now == nil {
		c.now = time.Now
	}
	if c.maxTries == 0 {
		c.maxTries = 100
	}
	c.Changes = controlplane.NewChanges(c.change, c.nowMs)
	return c, nil
}

// Subscribe implements [sortie.Notifier]: the channel gets a value
// (coalesced) after each change of run id this handle makes, and after
// each [ControlPlane.Changed] of it (package dynamostream calls it for the
// changes other processes make, read from the table's stream).
func (c *ControlPlane) Subscribe(id sortie.RunID) (<-chan struct{}, func()) {
	return c.hub.Subscribe(id)
}

// Changed wakes the subscribers of run id: another process changed it.
func (c *ControlPlane) Changed(id sortie.RunID) { c.hub.Notify(id) }

// PageTokenKeyID names the handle's page-token key (see
// [controlplane.PageTokens.KeyID]): handles of one deployment show the same.
func (c *ControlPlane) PageTokenKeyID() string { return c.tokens.KeyID() }

// Table returns the table name.
func (c *ControlPlane) Table() string { return c.table }

// Consumed returns the requests made and the capacity DynamoDB reported
// for them through this handle since [New].
func (c *ControlPlane) Consumed() Consumed { return c.units.consumed() }

// Close implements [sortie.ControlPlane.Close]. The DynamoDB client belongs
// to the caller and stays open. Later calls return sortie.ErrClosed.
func (c *ControlPlane) Close() error {
	c.closed.Store(true)
	return nil
}

func (c *ControlPlane) nowMs() int64 { return c.now().UnixMilli() }

// ready returns ErrClosed after Close.
func (c *ControlPlane) ready(op string) error {
	if c.closed.Load() {
		return fmt.Errorf("dynamo: %s: %w", op, sortie.ErrClosed)
	}
	return nil
}

// wrap gives err its one "dynamo: op:" prefix; context errors pass through.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	var ve *sortie.ValidationError
	if errors.As(err, &ve) {
		return err
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}
