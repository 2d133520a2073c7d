package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
	"github.com/sortie-run/sortie/crypto/sign"
)

// job is one due delivery: the configuration as stored and the run's
// current public view with its fingerprint.
type job struct {
	k   cfgKey
	cfg *sortie.PushConfig
	run *sortie.Run
	pub *sortie.Run
	fp  [32]byte
}

// deliver makes one delivery to configuration k if one is due, and
// records the outcome. A delivery interrupted by Shutdown records nothing.
func (d *Dispatcher) deliver(ctx context.Context, k cfgKey) {
	j, ok := d.due(ctx, k)
	if !ok || !d.lease(ctx, &j) {
		return
	}
	prev := j.cfg.Delivery
	if j.run.Version <= prev.DeliveredVersion { // terminal, delivered, not yet marked
		d.record(ctx, j, sortie.PushDelivery{DeliveredVersion: prev.DeliveredVersion, Done: true})
		return
	}
	signer, err := d.signer(j.cfg.KeyID)
	if err != nil {
		d.record(ctx, j, d.giveUp(prev, fmt.Sprintf("unknown webhook signing key %q", j.cfg.KeyID)))
		return
	}
	if msg := d.unsupported(j.cfg); msg != "" {
		d.record(ctx, j, d.giveUp(prev, msg))
		return
	}
	now := d.o.Now()
	status, err := d.post(ctx, j, signer, now)
	if err != nil && d.base.Err() != nil {
		d.log.Debug("push: delivery interrupted by shutdown; it stays pending", "run", k.run, "config", k.id)
		d.release(ctx, j)
		return
	}
	d.record(ctx, j, d.outcome(j, status, err, now))
}

// due reads k and its run, and returns the delivery to make, if any.
func (d *Dispatcher) due(ctx context.Context, k cfgKey) (job, bool) {
	cfg, err := d.store.GetPushConfig(ctx, k.run, k.id)
	if err != nil {
		if errors.Is(err, sortie.ErrNotFound) {
			d.forget(k) // deleted: no more deliveries
		} else if ctx.Err() == nil {
			d.log.Warn("push: read configuration", "run", k.run, "config", k.id, "error", err)
		}
		return job{}, false
	}
	if cfg.Delivery.Done || cfg.Delivery.NextAttemptMs > d.nowMs() {
		return job{}, false
	}
	j := job{k: k, cfg: cfg}
	run, err := d.runs.Get(ctx, k.run)
	if errors.Is(err, sortie.ErrNotFound) {
		d.record(ctx, j, d.giveUp(cfg.Delivery, "run not found"))
		return job{}, false
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("push: read run", "run", k.run, "error", err)
		}
		return job{}, false
	}
	j.run, j.pub = run, PublicRun(run)
	j.fp = fingerprint(j.pub)
	return j, d.wants(cfg, run, j.fp)
}

// lease takes j's delivery lease for this dispatcher, so of the hosts
// sharing the store one delivers each version, and takes the
// configuration as the lease returns it: it reports whether the delivery
// is still to be made (another host may have made it meanwhile). Another
// host's live lease, or a configuration done or deleted, ends this pass;
// the sweep looks again.
func (d *Dispatcher) lease(ctx context.Context, j *job) bool {
	now := d.nowMs()
	cfg, err := d.store.LeasePushDelivery(ctx, j.k.run, j.k.id, d.o.Owner, now, now+d.leaseMs())
	switch {
	case errors.Is(err, sortie.ErrNotFound):
		d.forget(j.k)
		return false
	case errors.Is(err, sortie.ErrConflict):
		d.log.Debug("push: another host delivers, or nothing is left to deliver", "run", j.k.run, "config", j.k.id)
		return false
	case err != nil:
		if ctx.Err() == nil {
			d.log.Warn("push: lease configuration", "run", j.k.run, "config", j.k.id, "error", err)
		}
		return false
	}
	j.cfg = cfg
	return d.wants(cfg, j.run, j.fp)
}

// release ends j's lease at once (a lease until the next ms), so the
// next host need not wait for it to end.
func (d *Dispatcher) release(ctx context.Context, j job) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.RequestTimeout)
	defer cancel()
	now := d.nowMs()
	if _, err := d.store.LeasePushDelivery(ctx, j.k.run, j.k.id, d.o.Owner, now, now+1); err != nil &&
		!errors.Is(err, sortie.ErrNotFound) && !errors.Is(err, sortie.ErrConflict) {
		d.log.Warn("push: end the delivery lease; another host delivers once it ends", "run", j.k.run, "config", j.k.id, "error", err)
	}
}

// leaseMs is how long a delivery lease lasts, in ms: long enough for the
// request and the record of its outcome.
func (d *Dispatcher) leaseMs() int64 { return (2*d.o.RequestTimeout + 5*time.Second).Milliseconds() }

// post sends the signed message, in the configuration's format and with
// its token, and returns the response status; at most MaxResponseBytes of
// the body are read, and redirects are the client's.
func (d *Dispatcher) post(ctx context.Context, j job, signer *sign.Signer, now time.Time) (int, error) {
	body, err := d.body(j, now.UnixMilli())
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sortie-push/1")
	if err := signer.Header(req.Header, MessageID(j.k.run, j.k.id, j.run.Version), now, body); err != nil {
		return 0, err
	}
	if err := d.setToken(ctx, req, j.cfg); err != nil {
		return 0, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	return resp.StatusCode, nil
}

// outcome is the delivery progress after a response with status, or the
// transport error err, at now.
func (d *Dispatcher) outcome(j job, status int, err error, now time.Time) sortie.PushDelivery {
	prev := j.cfg.Delivery
	switch {
	case err == nil && status >= 200 && status <= 299:
		return sortie.PushDelivery{DeliveredVersion: j.run.Version, Done: j.run.State.Terminal()}
	case err == nil && status == http.StatusGone:
		return sortie.PushDelivery{DeliveredVersion: prev.DeliveredVersion, Failures: prev.Failures,
			Done: true, LastError: "status 410 (the receiver unsubscribed)"}
	}
	var perm *permanent
	if errors.As(err, &perm) {
		return d.giveUp(prev, perm.msg)
	}
	msg := fmt.Sprintf("status %d", status)
	if err != nil {
		msg = errorText(err, j.cfg.URL)
	}
	n := prev.Failures + 1
	if n >= d.o.MaxFailures {
		return d.giveUp(sortie.PushDelivery{DeliveredVersion: prev.DeliveredVersion, Failures: n},
			fmt.Sprintf("%s (gave up after %d failures)", msg, n))
	}
	return sortie.PushDelivery{DeliveredVersion: prev.DeliveredVersion, Failures: n,
		NextAttemptMs: now.UnixMilli() + d.backoffMs(n), LastError: truncate(msg)}
}

// giveUp is prev marked Done with the error msg.
func (d *Dispatcher) giveUp(prev sortie.PushDelivery, msg string) sortie.PushDelivery {
	return sortie.PushDelivery{DeliveredVersion: prev.DeliveredVersion, Failures: prev.Failures,
		Done: true, LastError: truncate(msg)}
}

// backoffMs is the delay before the retry after failure n, in ms:
// uniformly random in [1, min(BackoffMax, BackoffBase·2^(n-1))] (at least
// 1 ms, so a retry always waits for a later sweep).
func (d *Dispatcher) backoffMs(n int) int64 {
	c := d.o.BackoffBase
	for i := 1; i < n && c < d.o.BackoffMax; i++ {
		c *= 2
	}
	ms := max(min(c, d.o.BackoffMax).Milliseconds(), 1)
	return 1 + rand.Int64N(ms)
}

// record stores the outcome p of j. A result already received is recorded
// even when Shutdown interrupts, within RequestTimeout.
func (d *Dispatcher) record(ctx context.Context, j job, p sortie.PushDelivery) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.RequestTimeout)
	defer cancel()
	err := d.store.UpdatePushDelivery(ctx, j.k.run, j.k.id, p)
	log := d.log.With("run", j.k.run, "config", j.k.id, "host", host(j.cfg.URL))
	switch {
	case errors.Is(err, sortie.ErrNotFound):
		d.forget(j.k)
		return
	case err != nil:
		log.Warn("push: record delivery", "error", err)
		return
	case p.Done:
		d.forget(j.k)
	case p.Failures == 0:
		d.remember(j.k, p.DeliveredVersion, j.fp)
	}
	countDelivery(ctx, p)
	switch {
	case p.LastError == "":
		log.Debug("push: delivered", "version", p.DeliveredVersion, "done", p.Done)
	case p.Done:
		log.Warn("push: delivery ended", "failures", p.Failures, "error", p.LastError)
	default:
		log.Warn("push: delivery failed", "failures", p.Failures, "next_attempt_ms", p.NextAttemptMs, "error", p.LastError)
	}
}

// errorText describes a transport error without the URL's query or
// fragment, which may hold a receiver's token.
func errorText(err error, rawURL string) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = fmt.Sprintf("%s %q: %v", ue.Op, sortie.SafeURL(ue.URL), ue.Err)
	}
	if u, perr := url.Parse(rawURL); perr == nil {
		for _, s := range []string{u.RawQuery, u.Fragment} {
			if s != "" {
				msg = strings.ReplaceAll(msg, s, "…")
			}
		}
	}
	return msg
}

// host is the URL's host, for logs.
func host(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// truncate cuts s to the stored limit of LastError, valid UTF-8.
func truncate(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= controlplane.MaxPushErrorBytes {
		return s
	}
	cut := controlplane.MaxPushErrorBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
