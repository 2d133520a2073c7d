package payload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload/sealed"
)

// Sealer seals and opens payloads; crypto/envelope's Config is the one to
// use. Its errors never contain a value.
type Sealer = sealed.Sealer

// Options configures a [Store]. A nil *Options means the defaults.
type Options struct {
	// Limits are the per-payload and per-run maxima. Optional; defaults
	// to [sortie.PayloadLimits] defaults (100 MiB and 256 MiB).
	Limits sortie.PayloadLimits
}

// Store is a [sortie.PayloadStore] on a blob bucket. It is safe for
// concurrent use.
type Store struct {
	bucket *blob.Bucket
	name   string
	sealer Sealer
	limits sortie.PayloadLimits
	// dir is a fileblob store's directory ([OpenFile]); "" otherwise.
	dir string
}

var _ sortie.PayloadStore = (*Store)(nil)

// sealSlackBytes bounds what sealing adds to a value.
const sealSlackBytes = sealed.SlackBytes

// New returns a Store over bucket, named name in references (for example
// "file" or "s3://BUCKET"; never a credential or a local path), sealing
// with sealer. The Store does not own the bucket: close it after the
// Store's last use.
func New(bucket *blob.Bucket, name string, sealer Sealer, opts *Options) *Store {
	s := &Store{bucket: bucket, name: name, sealer: sealer}
	if opts != nil {
		s.limits = opts.Limits
	}
	s.limits = s.limits.WithDefaults()
	return s
}

// Name returns the store's name, as references carry it.
func (s *Store) Name() string { return s.name }

// Limits implements [sortie.PayloadStore].
func (s *Store) Limits() sortie.PayloadLimits { return s.limits }

// Key returns the object key of run's payload name: "runs/RUN/NAME".
func Key(run sortie.RunID, name string) string { return sealed.Key(run, name) }

// Put implements [sortie.PayloadStore].
func (s *Store) Put(ctx context.Context, run sortie.RunID, agent, name, field string, value []byte) (*sortie.PayloadRef, error) {
	if n := int64(len(value)); n > s.limits.MaxPayloadBytes {
		return nil, sortie.Invalidf(field, "%d bytes, over the payload store's per-payload limit of %d bytes%s", n, s.limits.MaxPayloadBytes, s.limits.PayloadSetting())
	}
	key := Key(run, name)
	if err := s.checkRunTotal(ctx, run, key, field, int64(len(value))); err != nil {
		return nil, err
	}
	object, ref, err := sealed.Seal(ctx, s.sealer, s.name, run, agent, key, field, value)
	if err != nil {
		return nil, err
	}
	if err := s.bucket.WriteAll(ctx, key, object, &blob.WriterOptions{ContentType: "application/octet-stream", BeforeWrite: ownerOnly}); err != nil {
		return nil, s.wrap("store", key, err)
	}
	return ref, nil
}

// ownerOnly makes the file a bucket writes an object to readable by its
// owner only (0600) before anything is written, on drivers that write
// local files (fileblob); others expose no *os.File and are left alone.
func ownerOnly(as func(any) bool) error {
	var f *os.File
	if as(&f) {
		return f.Chmod(0o600)
	}
	return nil
}

// checkRunTotal refuses a payload of n bytes that would take run's
// payloads (other than key) over the per-run limit.
func (s *Store) checkRunTotal(ctx context.Context, run sortie.RunID, key, field string, n int64) error {
	total := n
	err := s.each(ctx, run, func(o *blob.ListObject) error {
		if o.Key != key {
			total += max(o.Size-sealSlackBytes, 0)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if total > s.limits.MaxRunBytes {
		return sortie.Invalidf(field, "the run's payloads would take %d bytes, over the payload store's per-run limit of %d bytes%s", total, s.limits.MaxRunBytes, s.limits.RunSetting())
	}
	return nil
}

// Get implements [sortie.PayloadStore].
func (s *Store) Get(ctx context.Context, run sortie.RunID, agent string, ref *sortie.PayloadRef) ([]byte, error) {
	if err := sealed.CheckRef(s.name, run, ref); err != nil {
		return nil, err
	}
	object, err := s.read(ctx, ref.Key, ref.Size+sealSlackBytes)
	if errors.Is(err, sortie.ErrNotFound) {
		return nil, sealed.Missing(run, ref)
	} else if err != nil {
		return nil, err
	}
	return sealed.Open(ctx, s.sealer, run, agent, ref, object)
}

// read returns the object key, refusing one over limit bytes.
func (s *Store) read(ctx context.Context, key string, limit int64) ([]byte, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, s.wrap("read", key, err)
	}
	defer r.Close()
	if r.Size() > limit {
		return nil, fmt.Errorf("payload %s: the stored object is %d bytes, more than its reference allows (%d): %w", key, r.Size(), limit, sortie.ErrPayloadIntegrity)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, s.wrap("read", key, err)
	}
	return b, nil
}

// DeleteRun implements [sortie.PayloadStore]. On a store of [OpenFile] it
// also removes the run's directory once empty (fileblob leaves it).
func (s *Store) DeleteRun(ctx context.Context, run sortie.RunID) error {
	err := s.each(ctx, run, func(o *blob.ListObject) error {
		if err := s.bucket.Delete(ctx, o.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return s.wrap("delete", o.Key, err)
		}
		return nil
	})
	if err != nil || s.dir == "" {
		return err
	}
	return s.removeRunDir(run)
}

// removeRunDir removes the empty directory of run's objects in a fileblob
// store: its path is built from the validated run ID, so no caller's
// string names a path. A directory gone or not empty (a write racing the
// deletion, for the sweep) is left to the next deletion or sweep.
func (s *Store) removeRunDir(run sortie.RunID) error {
	if run.Validate() != nil {
		return nil // no object of such a run could exist
	}
	dir := filepath.Join(s.dir, filepath.FromSlash(Key(run, "")))
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return fmt.Errorf("payload store %q: remove the directory of run %s: %v: %w", s.name, run, err, sortie.ErrUnavailable)
}

// each calls fn for every object of run.
func (s *Store) each(ctx context.Context, run sortie.RunID, fn func(*blob.ListObject) error) error {
	it := s.bucket.List(&blob.ListOptions{Prefix: Key(run, "")})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return s.wrap("list the objects of run", string(run), err)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
}

// wrap maps a bucket error to the sortie sentinels: not found to
// ErrNotFound, context errors unchanged, anything else ErrUnavailable.
func (s *Store) wrap(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	sentinel := sortie.ErrUnavailable
	if gcerrors.Code(err) == gcerrors.NotFound {
		sentinel = sortie.ErrNotFound
	}
	return fmt.Errorf("payload store %q: %s %s: %v: %w", s.name, op, key, err, sentinel)
}
