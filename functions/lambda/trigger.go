package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
)

// TriggerHandler builds the trigger mode's handler: the rules of
// [EnvTriggerRules] route each event (EventBridge, S3, SQS with partial
// batch failures, SNS; S3 records unwrapped from SNS, SQS and EventBridge)
// to runs of agents, submitted to an engine over the DynamoDB control
// plane that launches attempts on [EnvWorkerFunction]; see
// triggers.Router.HandleLambda for what is retried and what is
// acknowledged.
// Before it returns, the handler waits for the launches it began, so a
// frozen execution environment loses none.
func (e *Env) TriggerHandler(ctx context.Context, agents sortie.AgentCatalog, log *slog.Logger) (func(context.Context, json.RawMessage) (any, error), error) {
	rules, err := triggers.LoadRules(e.TriggerRules)
	if err != nil {
		return nil, fmt.Errorf("lambda: %s: %w", EnvTriggerRules, err)
	}
	cfg, cp, keeper, err := e.open(ctx)
	if err != nil {
		return nil, err
	}
	newEngine, err := e.engineFactory(cfg, cp, keeper, agents, log)
	if err != nil {
		return nil, err
	}
	engine := newEngine()
	router := triggers.NewRouter(rules, engine, &triggers.Options{Logger: log})
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		out, err := router.HandleLambda(ctx, event)
		if werr := engine.WaitLaunches(ctx); werr != nil {
			log.Warn("trigger: launches still pending; the reconciler relaunches them", "err", werr)
		}
		return out, err
	}, nil
}
