package cloudrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// ServiceOptions configures a [ServiceLauncher].
type ServiceOptions struct {
	// URL is the service's HTTPS URL, for example
	// "https://sortie-worker-abc123-ew.a.run.app". Required.
	URL string
	// Client sends the requests. Required; in production
	// idtoken.NewClient(ctx, URL) (google.golang.org/api/idtoken), which
	// adds a Google-signed ID token with the service URL as audience.
	Client *http.Client
	// Project and Region are recorded on each [sortie.Ref]. Optional.
	Project, Region string
}

// ServiceLauncher starts attempts on a Cloud Run service running
// cmd/sortie-cloudrun in service mode: an HTTPS POST of the invocation to
// URL + [fncloudrun.InvocationsPath], answered once the attempt is
// claimed. It implements [sortie.Launcher] only: a service cannot stop one
// request's work from outside, so cancellation is the cooperative one every
// worker sees on its heartbeat, and the run's lease is what the reconciler
// watches.
type ServiceLauncher struct {
	opts   ServiceOptions
	target string
}

var _ sortie.Launcher = (*ServiceLauncher)(nil)

// NewService returns a launcher of opts.URL. It returns a
// [*sortie.ValidationError] when URL is not an absolute http(s) URL or
// Client is nil.
func NewService(opts ServiceOptions) (*ServiceLauncher, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, sortie.Invalidf("url", "%.200q must be an absolute https URL", sortie.SafeURL(opts.URL))
	}
	if opts.Client == nil {
		return nil, sortie.Invalidf("client", "an *http.Client is required (idtoken.NewClient in production)")
	}
	return &ServiceLauncher{opts: opts, target: strings.TrimSuffix(opts.URL, "/") + fncloudrun.InvocationsPath}, nil
}

// Start POSTs inv and returns once the service claimed the attempt (202).
// A 409 (the claim was refused: a duplicate delivery, or a cancelled or
// terminal run) is success: the attempt was delivered before, or must not
// run. A 400 or 413 is a [*sortie.ValidationError]; 429, 5xx and transport
// errors wrap [sortie.ErrUnavailable]; 401 and 403 are errors naming the
// status.
func (l *ServiceLauncher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	op := fmt.Sprintf("cloudrun: post run %s attempt %d to %s", inv.RunID, inv.Attempt, l.opts.URL)
	b, err := json.Marshal(inv)
	if err != nil {
		return sortie.Ref{}, fmt.Errorf("%s: encode: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.target, bytes.NewReader(b))
	if err != nil {
		return sortie.Ref{}, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.opts.Client.Do(req)
	if err != nil {
		return sortie.Ref{}, fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	var a fncloudrun.Answer
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&a)
	switch c := resp.StatusCode; {
	case c == http.StatusAccepted, c == http.StatusConflict:
		return l.ref(inv, a.Status), nil
	case c == http.StatusBadRequest, c == http.StatusRequestEntityTooLarge:
		return sortie.Ref{}, fmt.Errorf("%s: %w", op, sortie.Invalidf("invocation", "the service refused it (%d): %s", c, a.Error))
	case c == http.StatusTooManyRequests, c >= 500:
		return sortie.Ref{}, fmt.Errorf("%s: %w: status %d %s", op, sortie.ErrUnavailable, c, a.Error)
	}
	return sortie.Ref{}, fmt.Errorf("%s: status %d %s", op, resp.StatusCode, a.Error)
}

func (l *ServiceLauncher) ref(inv *sortie.Invocation, status string) sortie.Ref {
	return sortie.Ref{Provider: Provider, Account: l.opts.Project, Region: l.opts.Region, Resource: l.opts.URL,
		ID: "launch:" + inv.LaunchID, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID,
		Detail: map[string]string{"mode": "service", "status": status}}
}
