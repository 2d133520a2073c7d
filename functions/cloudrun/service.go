package cloudrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// InvocationsPath is the path the service takes invocations on.
const InvocationsPath = "/invocations"

// Verifier checks that a request comes from an allowed caller.
type Verifier interface {
	// Verify returns nil for an allowed caller, else an error saying why.
	Verify(ctx context.Context, r *http.Request) error
}

// Answer is the JSON body the service answers with.
type Answer struct {
	RunID   sortie.RunID `json:"run_id,omitempty"`
	Attempt int          `json:"attempt,omitempty"`
	// Status is "claimed" (202) or "not-executed" (409).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Handler is service mode: an http.Handler that takes one invocation per
// POST to [InvocationsPath], claims the attempt and answers 202 once it is
// claimed, then runs it in the background of the instance. The instance
// must keep its CPU after the response: deploy the service with
// instance-based billing ("CPU always allocated"); with request-based
// billing Cloud Run throttles the CPU once the response is sent and the
// attempt stalls until its lease expires.
//
// It answers 401 to a caller the Verifier refuses, 405 to other methods,
// 404 to other paths, 413 over [sortie.MaxInvocationBytes], 400 to an
// invalid invocation, 409 when the claim is refused (a duplicate delivery,
// a superseded launch, a cancelled or terminal run: nothing ran) and 503
// when the control plane is unavailable.
type Handler struct {
	// Worker executes attempts. Required.
	Worker *functions.Worker
	// ControlPlane is where the worker reports attempts whose invocation
	// says so (report mode "control-plane"). Optional; without it only
	// invocations that report over callbacks are taken, others get 400.
	ControlPlane sortie.ControlPlane
	// Verifier checks callers. Required; see [IDTokenVerifier].
	Verifier Verifier
	// Logger receives the handler's logs. Optional; defaults to slog.Default().
	Logger *slog.Logger
	// Size is the container's size, recorded on each attempt's usage
	// (instance-based billing, from the invocation's arrival). Optional;
	// defaults to Cloud Run's 512 MiB and 1 vCPU.
	Size Size

	once   sync.Once
	ctx    context.Context // the background attempts' context, ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (h *Handler) init() {
	h.once.Do(func() { h.ctx, h.cancel = context.WithCancel(context.Background()) })
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// Close ends the attempts still running (they finish with error type
// "terminated", retryable) and waits until their outcomes are stored.
func (h *Handler) Close() {
	h.init()
	h.cancel()
	h.wg.Wait()
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.init()
	switch {
	case r.URL.Path != InvocationsPath:
		answer(w, http.StatusNotFound, Answer{Status: "refused", Error: "no such path"})
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, Answer{Status: "refused", Error: "only POST"})
		return
	}
	if err := h.Verifier.Verify(r.Context(), r); err != nil {
		h.logger().Warn("cloudrun service: caller refused", "err", err)
		answer(w, http.StatusUnauthorized, Answer{Status: "refused", Error: "caller not verified"})
		return
	}
	inv, code, err := readInvocation(r)
	if err != nil {
		answer(w, code, Answer{Status: "refused", Error: err.Error()})
		return
	}
	code, a := h.start(inv)
	answer(w, code, a)
}

// readInvocation reads and validates the body.
func readInvocation(r *http.Request) (*sortie.Invocation, int, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, sortie.MaxInvocationBytes+1))
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	if len(b) > sortie.MaxInvocationBytes {
		return nil, http.StatusRequestEntityTooLarge, sortie.Invalidf("invocation", "over %d bytes", sortie.MaxInvocationBytes)
	}
	inv, err := sortie.DecodeInvocation(b)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	return inv, 0, nil
}

// start runs inv in the background and waits for its claim.
func (h *Handler) start(inv *sortie.Invocation) (int, Answer) {
	a := Answer{RunID: inv.RunID, Attempt: inv.Attempt}
	claimed := make(chan error, 1)
	wk := *h.Worker
	wk.Owner = "cloudrun-service:" + inv.LaunchID
	inner, err := functions.NewReporter(inv, h.ControlPlane, wk.Owner, callbackClient)
	if err != nil {
		a.Status, a.Error = "not-executed", err.Error()
		return http.StatusBadRequest, a
	}
	rep := &claimNoter{Reporter: meter(inner, time.Now(), h.Size, "instance"), claimed: claimed}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if _, err := wk.Execute(h.ctx, inv, rep); err != nil {
			h.logger().Warn("cloudrun service: attempt", "run", inv.RunID, "attempt", inv.Attempt, "err", err)
		}
	}()
	err = <-claimed
	switch {
	case err == nil:
		a.Status = "claimed"
		return http.StatusAccepted, a
	case errors.Is(err, sortie.ErrUnavailable):
		a.Status, a.Error = "not-executed", err.Error()
		return http.StatusServiceUnavailable, a
	}
	a.Status, a.Error = "not-executed", err.Error()
	return http.StatusConflict, a
}

// claimNoter passes on the result of Claim.
type claimNoter struct {
	functions.Reporter
	claimed chan<- error
}

func (r *claimNoter) Claim(ctx context.Context) error {
	err := r.Reporter.Claim(ctx)
	r.claimed <- err
	return err
}

func answer(w http.ResponseWriter, code int, a Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(a)
}
