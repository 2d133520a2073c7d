package host

import (
	"context"
	"time"

	"github.com/sortie-run/sortie"
)

// EnvRetention is Config.Retention, a Go duration ("720h"), for `sortie
// serve` and `sortie reconcile` (--retention).
const EnvRetention = sortie.EnvRetention

// retentionInterval is how often the reconciler deletes expired runs.
const retentionInterval = time.Minute

// validateRetention checks Config.Retention.
func (c *Config) validateRetention() error {
	if c.Retention != 0 && c.Retention < sortie.MinRetention {
		return sortie.Invalidf("Retention", "%v: at least %v (0 keeps runs forever)", c.Retention, sortie.MinRetention)
	}
	return nil
}

// ExpireRuns deletes the terminal runs last updated before now less
// Config.Retention, with their payload objects, in batches of 100 until
// none is left ([sortie.Engine.ExpireAll]), and returns how many it
// deleted. Without a retention it deletes nothing.
func (h *Host) ExpireRuns(ctx context.Context, now time.Time) (int, error) {
	if h.cfg.Retention <= 0 {
		return 0, nil
	}
	return h.engine.ExpireAll(ctx, now.Add(-h.cfg.Retention))
}

// expireRuns runs ExpireRuns at once and then every retentionInterval
// until ctx ends.
func (h *Host) expireRuns(ctx context.Context) {
	t := time.NewTicker(retentionInterval)
	defer t.Stop()
	for {
		if n, err := h.ExpireRuns(ctx, time.Now()); err != nil && ctx.Err() == nil {
			h.log.Warn("retention: expire runs", "deleted", n, "err", err)
		} else if n > 0 {
			h.log.Info("retention: deleted the runs that ended before the retention", "runs", n, "retention", h.cfg.Retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
