package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// input is what Sortie's benchmark submits to the probe agent; result is what
// the Bench/Run handler returns.
const (
	input  = `{"events":0}`
	result = `{"ok":true}`
)

func (cfg config) validate() error {
	urls := map[string]string{"-ingress": cfg.ingress, "-admin": cfg.admin, "-deployment": cfg.deployment}
	for name, u := range urls {
		if err := checkLoopback(u); u != "" && err != nil {
			return fmt.Errorf("%s %q: %w", name, u, err)
		}
	}
	switch {
	case cfg.deployment != "" && cfg.admin == "":
		return errors.New("-deployment needs -admin")
	case cfg.n < 1 || cfg.n > 1_000_000:
		return fmt.Errorf("-n %d out of range 1..1000000", cfg.n)
	case cfg.inFlight < 1 || cfg.inFlight > 1024:
		return fmt.Errorf("-c %d out of range 1..1024", cfg.inFlight)
	case cfg.warmup < 0 || cfg.warmup > 100_000:
		return fmt.Errorf("-warmup %d out of range 0..100000", cfg.warmup)
	}
	return nil
}

func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" {
		return errors.New("scheme must be http")
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return errors.New("host must be a loopback IP")
	}
	return nil
}

// client makes HTTP/1.1 calls with one kept-alive connection per caller and
// no proxy.
type client struct{ hc *http.Client }

func newClient(inFlight int) *client {
	t := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        inFlight + 4,
		MaxIdleConnsPerHost: inFlight + 4,
		IdleConnTimeout:     time.Minute,
	}
	return &client{hc: &http.Client{Transport: t}}
}

func (c *client) post(ctx context.Context, u, key, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("idempotency-key", key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(bytes.TrimSpace(b)), err
}

// invoke calls Bench/Run through the ingress and waits for its result.
func (c *client) invoke(ctx context.Context, ingress, key string) error {
	code, body, err := c.post(ctx, ingress+"/Bench/Run", key, input)
	if err != nil {
		return fmt.Errorf("invoke Bench/Run key %s: %w", key, err)
	}
	if code != http.StatusOK || body != result {
		return fmt.Errorf("invoke Bench/Run key %s = %d %q, want 200 %q", key, code, body, result)
	}
	return nil
}

// register registers the deployment with the admin API (POST /deployments).
func (c *client) register(ctx context.Context, admin, deployment string) error {
	code, body, err := c.post(ctx, admin+"/deployments", "", fmt.Sprintf(`{"uri":%q}`, deployment))
	if err != nil {
		return fmt.Errorf("register %s: %w", deployment, err)
	}
	if code != http.StatusCreated && code != http.StatusOK {
		return fmt.Errorf("register %s = %d %q, want 201", deployment, code, body)
	}
	return nil
}

// awaitReady calls Bench/Run until it succeeds: the ingress learns a new
// deployment asynchronously after registration.
func (c *client) awaitReady(ctx context.Context, ingress, key string) error {
	for {
		err := c.invoke(ctx, ingress, key)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ingress not ready: %w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
