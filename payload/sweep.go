package payload

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"gocloud.dev/blob"

	"github.com/sortie-run/sortie"
)

// Sweep implements [sortie.PayloadStore]: it deletes the objects of every
// run created before createdBefore (the time in its ID) for which keep
// reports false, and returns how many runs it swept. Objects of younger
// runs stay: a submission stores its variables before its run is
// recorded. It stops at keep's first error.
func (s *Store) Sweep(ctx context.Context, keep func(context.Context, sortie.RunID) (bool, error), createdBefore time.Time) (int, error) {
	it := s.bucket.List(&blob.ListOptions{Prefix: "runs/", Delimiter: "/"})
	swept := 0
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return swept, nil
		} else if err != nil {
			return swept, s.wrap("list", "runs/", err)
		}
		id, ok := runOf(o)
		if !ok || !ulid.MustParse(string(id)).Timestamp().Before(createdBefore) {
			continue
		}
		kept, err := keep(ctx, id)
		if err != nil {
			return swept, err
		}
		if kept {
			continue
		}
		if err := s.DeleteRun(ctx, id); err != nil {
			return swept, err
		}
		swept++
	}
}

// runOf returns the run of a listed folder "runs/RUN_ID/".
func runOf(o *blob.ListObject) (sortie.RunID, bool) {
	name, ok := strings.CutPrefix(strings.TrimSuffix(o.Key, "/"), "runs/")
	id := sortie.RunID(name)
	return id, o.IsDir && ok && id.Validate() == nil
}
