package lambda

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
)

// TriggerHandler returns the trigger mode's handler: router routes each
// event (EventBridge, S3, SQS with partial batch failures, SNS; S3 records
// unwrapped from SNS, SQS and EventBridge) to runs it submits to engine,
// whose launcher invokes the worker function (package host/awshost builds
// both from [EnvTriggerRules] and [EnvWorkerFunction]); see
// triggers.Router.HandleLambda for what is retried and what is
// acknowledged. Before it returns, the handler waits for the launches
// engine began, so a frozen execution environment loses none.
func TriggerHandler(router *triggers.Router, engine *sortie.Engine, log *slog.Logger) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		out, err := router.HandleLambda(ctx, event)
		if werr := engine.WaitLaunches(ctx); werr != nil {
			log.Warn("trigger: launches still pending; the reconciler relaunches them", "err", werr)
		}
		return out, err
	}
}
