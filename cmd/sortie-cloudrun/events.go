package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	cloudrunapi "cloud.google.com/go/run/apiv2"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/cehttp"
	"github.com/sortie-run/sortie/launchers/cloudrun"
)

// eventsHandler is the CloudEvents endpoint of service mode: the rules of
// SORTIE_TRIGGER_RULES route Eventarc's events (verified callers only) to
// runs launched on the Job of SORTIE_CLOUDRUN_JOB. It returns a nil handler
// when no rules are set, and a close function for the Admin API clients.
func eventsHandler(ctx context.Context, env *fncloudrun.Env, cp sortie.ControlPlane, v fncloudrun.Verifier, log *slog.Logger) (http.Handler, func(), error) {
	if env.TriggerRules == "" {
		return nil, func() {}, nil
	}
	rules, err := triggers.LoadRules(env.TriggerRules)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", fncloudrun.EnvTriggerRules, err)
	}
	jobs, err := cloudrunapi.NewJobsClient(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud run jobs client: %w", err)
	}
	execs, err := cloudrunapi.NewExecutionsClient(ctx)
	if err != nil {
		jobs.Close()
		return nil, nil, fmt.Errorf("cloud run executions client: %w", err)
	}
	closeAll := func() { jobs.Close(); execs.Close() }
	l, err := cloudrun.NewJobs(jobs, execs, cloudrun.JobsOptions{Job: env.Job})
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("%s: %w", fncloudrun.EnvJob, err)
	}
	engine := sortie.NewEngine(cp, l, agents(), &sortie.EngineOptions{Logger: log})
	router := triggers.NewRouter(rules, engine, &triggers.Options{Logger: log})
	return fncloudrun.Verified(v, cehttp.NewHandler(router, &cehttp.Options{Logger: log}), log), closeAll, nil
}
