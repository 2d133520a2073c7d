package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// Options configures [Open]. A nil *Options means the defaults.
type Options struct {
	// BusyTimeout is how long a call waits for another process's write
	// transaction before it fails with sortie.ErrUnavailable. Optional;
	// defaults to 10 s.
	BusyTimeout time.Duration
	// Synchronous is SQLite's synchronous setting: "FULL" fsyncs every
	// commit before the call returns; "NORMAL" leaves the last commits
	// exposed to a power loss (see the package doc). Optional; defaults to
	// "FULL".
	Synchronous string
	// MaxReaders is the most connections used for reads (Get, List, Events,
	// Expired). Optional; defaults to 4.
	MaxReaders int
	// Now stamps changes that carry no time of their own (RequestCancel,
	// Resume, SetRef). Optional; defaults to time.Now.
	Now func() time.Time
	// PageTokenKey signs List page tokens (see [controlplane.PageTokens]):
	// at least 16 bytes. Optional; defaults to the key the file made for
	// itself when it was created, so every process opening the file takes
	// the tokens of the others and a token of another store is refused.
	PageTokenKey []byte
}

// ControlPlane is a [sortie.ControlPlane] and [sortie.Notifier] on one
// SQLite file. Open it with [Open]; it is safe for concurrent use, and
// several values (in one or more processes) may share the file.
type ControlPlane struct {
	w   *sql.DB    // the writer's pool: one connection, held by wconn
	wtx *stmtCache // prepared statements on wconn, used by the writer goroutine only
	r   *sql.DB    // read-only connections
	rq  *stmtCache // prepared statements on r

	wconn   *sql.Conn
	reqs    chan *writeReq
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the writer goroutine ended

	now    func() time.Time
	tokens *controlplane.PageTokens
	hub    controlplane.Hub
	runs   runCache // decoded runs by version
	closed atomic.Bool

	// Changes gives the state-changing methods (RecordLaunch, SetRef,
	// Claim, Heartbeat, Finish, RequestCancel, Resume) over c.change.
	controlplane.Changes
}

var (
	_ sortie.ControlPlane = (*ControlPlane)(nil)
	_ sortie.Notifier     = (*ControlPlane)(nil)
)

// Open opens (creating it with mode 0600 if needed) the database file at
// path, sets WAL mode and creates or migrates the schema. path comes from
// the host's configuration, never from a request; its directory must
// exist. opts may be nil. It returns a [*sortie.ValidationError] for bad
// options, and an error naming the file when it cannot be opened or its
// schema is newer than this build.
func Open(path string, opts *Options) (*ControlPlane, error) {
	o, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, sortie.Invalidf("path", "the database file path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	f.Close()
	c := &ControlPlane{now: o.Now}
	c.Changes = controlplane.NewChanges(c.change, c.nowMs)
	if err := c.open(abs, o); err != nil {
		c.closeDBs()
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	return c, nil
}

func withDefaults(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 10 * time.Second
	}
	o.Synchronous = strings.ToUpper(o.Synchronous)
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	if o.MaxReaders == 0 {
		o.MaxReaders = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.BusyTimeout < 0:
		return o, sortie.Invalidf("busy_timeout", "%v is negative", o.BusyTimeout)
	case o.Synchronous != "FULL" && o.Synchronous != "NORMAL":
		return o, sortie.Invalidf("synchronous", "%q must be FULL or NORMAL", o.Synchronous)
	case o.MaxReaders < 0 || o.MaxReaders > 64:
		return o, sortie.Invalidf("max_readers", "%d outside 1..64", o.MaxReaders)
	}
	return o, nil
}

func (c *ControlPlane) open(abs string, o Options) error {
	ctx := context.Background()
	file := "file:" + (&url.URL{Path: abs}).EscapedPath()
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds())
	var err error
	c.w, err = sql.Open("sqlite", file+"?"+busy+"&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous("+o.Synchronous+")")
	if err != nil {
		return err
	}
	c.w.SetMaxOpenConns(1)
	if c.wconn, err = c.w.Conn(ctx); err != nil {
		return err
	}
	c.wtx = newStmtCache(c.wconn)
	var mode string
	if err := c.wconn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal (does the file system support shared memory?)", mode)
	}
	if err := migrate(ctx, c.wconn); err != nil {
		return err
	}
	if c.tokens, err = c.pageTokens(ctx, o.PageTokenKey); err != nil {
		return err
	}
	if c.r, err = sql.Open("sqlite", file+"?"+busy+"&_pragma=query_only(1)"); err != nil {
		return err
	}
	c.r.SetMaxOpenConns(o.MaxReaders)
	c.r.SetMaxIdleConns(o.MaxReaders)
	c.rq = newStmtCache(c.r)
	c.reqs, c.stop, c.stopped = make(chan *writeReq), make(chan struct{}), make(chan struct{})
	go c.writeLoop()
	return nil
}

// pageTokens returns the page tokens of key, or of the file's own key.
func (c *ControlPlane) pageTokens(ctx context.Context, key []byte) (*controlplane.PageTokens, error) {
	if key == nil {
		err := c.wconn.QueryRowContext(ctx, `SELECT value FROM store WHERE name = 'page_token_key'`).Scan(&key)
		if err != nil {
			return nil, fmt.Errorf("read the store's page-token key: %w", err)
		}
	}
	return controlplane.NewPageTokens(key)
}

// closeDBs closes the statements, the writer connection and both pools.
func (c *ControlPlane) closeDBs() error {
	for _, s := range []*stmtCache{c.wtx, c.rq} {
		if s != nil {
			s.close()
		}
	}
	var errs []error
	if c.wconn != nil {
		errs = append(errs, c.wconn.Close())
	}
	for _, db := range []*sql.DB{c.w, c.r} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Close implements [sortie.ControlPlane.Close]: it closes the file's
// connections. Later calls return sortie.ErrClosed; closing again is a no-op.
func (c *ControlPlane) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.stop)
	<-c.stopped // the writer answered the batch it had
	if err := c.closeDBs(); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Subscribe implements [sortie.Notifier]: the channel gets a value after
// every change of the run made through c, before the changing call returns.
// Changes made by other handles or processes do not wake it.
func (c *ControlPlane) Subscribe(id sortie.RunID) (<-chan struct{}, func()) {
	return c.hub.Subscribe(id)
}

func (c *ControlPlane) nowMs() int64 { return c.now().UnixMilli() }

// ready returns ErrClosed after Close.
func (c *ControlPlane) ready(op string) error {
	if c.closed.Load() {
		return fmt.Errorf("sqlite: %s: %w", op, sortie.ErrClosed)
	}
	return nil
}

// wrap gives a failure of the database its one "sqlite:" prefix. An
// outcome of the interface's contract (not found, an idempotency
// conflict, ...) is the same on every control plane and goes to users as
// it is, without the backend's name; context errors pass through
// unwrapped, and a failure caused by Close becomes ErrClosed.
func (c *ControlPlane) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case isContract(err):
		return err
	case c.closed.Load():
		return fmt.Errorf("sqlite: %s: %w", op, sortie.ErrClosed)
	}
	return fmt.Errorf("sqlite: %w", err)
}

// isContract reports whether err carries one of the interface's sentinels.
func isContract(err error) bool {
	for _, s := range []error{sortie.ErrNotFound, sortie.ErrIdempotencyConflict, sortie.ErrConflict,
		sortie.ErrTerminal, sortie.ErrCancelRequested, sortie.ErrInvalidArgument, sortie.ErrBudgetExhausted} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// dbErr names a failed statement and maps SQLite's busy and locked codes
// to sortie.ErrUnavailable and constraint violations to sortie.ErrConflict,
// keeping the driver's *sqlite.Error reachable with errors.As.
func dbErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%s: %w: %w", what, sortie.ErrUnavailable, err)
		case sqlite3.SQLITE_CONSTRAINT:
			return fmt.Errorf("%s: %w: %w", what, sortie.ErrConflict, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}
