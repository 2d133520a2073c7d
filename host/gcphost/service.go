package gcphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/inputschema"
)

// ShutdownGrace bounds the wait for requests in flight when service mode
// stops; Cloud Run gives an instance 10 s after SIGTERM.
const ShutdownGrace = 5 * time.Second

// Service is the container's service mode: [fncloudrun.Handler] on
// [fncloudrun.InvocationsPath] and, with trigger rules, CloudEvents on
// [fncloudrun.EventsPath], both for callers with a Google ID token for the
// service's audience.
type Service struct {
	invocations *fncloudrun.Handler
	mux         *http.ServeMux
	closeEvents func()
	log         *slog.Logger
}

// NewService builds service mode from env over the opened container c:
// its worker executes the invocations, reporting where each says (c's
// control plane or the host's callbacks); with
// [fncloudrun.EnvTriggerRules] the rules route Eventarc's events to runs
// of agents launched on the Job of [fncloudrun.EnvJob], their inline
// configuration sealed with c's keyring. It fails for rules that do not
// load or a Job the launcher refuses. log may be nil (slog.Default()). The
// caller closes the service.
func NewService(ctx context.Context, env *fncloudrun.Env, c *Container, agents sortie.AgentCatalog, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.Default()
	}
	verifier := &fncloudrun.IDTokenVerifier{Audiences: env.Audiences, OwnRunAppHost: true, Callers: env.Callers}
	cp := sortie.ControlPlane(c.ControlPlane) // nil without one
	s := &Service{invocations: &fncloudrun.Handler{Worker: c.Worker, ControlPlane: cp, Logger: log, Verifier: verifier, Size: env.Size},
		mux: http.NewServeMux(), closeEvents: func() {}, log: log}
	s.mux.Handle(fncloudrun.InvocationsPath, s.invocations)
	if env.TriggerRules == "" {
		return s, nil
	}
	rules, err := triggers.LoadRules(env.TriggerRules)
	if err == nil {
		err = rules.CheckConfigRefs(env.ConfigRefs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fncloudrun.EnvTriggerRules, err)
	}
	l, closeJobs, err := OpenJobs(ctx, env.Job)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fncloudrun.EnvJob, err)
	}
	s.closeEvents = closeJobs
	opts := &sortie.EngineOptions{Logger: log, Models: env.Models, Inputs: inputschema.Default}
	if c.Keyring != nil {
		opts.Sealer = c.Keyring.Config
	}
	if env.ConfigRefs != nil {
		opts.ConfigRefs = env.ConfigRefs
	}
	engine := sortie.NewEngine(cp, l, agents, opts)
	router := triggers.NewRouter(rules, engine, &triggers.Options{Logger: log})
	s.mux.Handle(fncloudrun.EventsPath, fncloudrun.Verified(verifier, cehttp.NewHandler(router, &cehttp.Options{Logger: log}), log))
	return s, nil
}

// Serve serves on ln until ctx ends (SIGTERM), each request traced under
// the traceparent it carries (Cloud Run forwards one), then stops taking requests,
// waits up to [ShutdownGrace] for those in flight, ends the attempts still
// running and stores their outcomes. It returns the server's error when
// serving fails before ctx ends, else nil.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	h := otelhttp.NewHandler(s.mux, "sortie.cloudrun", otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(spanName))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.invocations.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn("cloudrun service: shutdown", "err", err)
	}
	s.invocations.Close()
	return nil
}

// spanName names a request's span by its route, never by an unknown path.
func spanName(_ string, r *http.Request) string {
	if p := r.URL.Path; p == fncloudrun.InvocationsPath || p == fncloudrun.EventsPath {
		return r.Method + " " + p
	}
	return r.Method
}

// Close releases the Admin API clients of the trigger route.
func (s *Service) Close() { s.closeEvents() }
