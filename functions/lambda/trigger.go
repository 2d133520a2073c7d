package lambda

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
)

// xrayContextKey is where aws-lambda-go puts the invocation's X-Ray trace
// header (Lambda-Runtime-Trace-Id) in the handler's context.
const xrayContextKey = "x-amzn-trace-id"

// TriggerHandler returns the trigger mode's handler: router routes each
// event (EventBridge, S3, SQS with partial batch failures, SNS; S3 records
// unwrapped from SNS, SQS and EventBridge) to runs it submits to engine,
// whose launcher invokes the worker function (package host/awshost builds
// both from [EnvTriggerRules] and [EnvWorkerFunction]); see
// triggers.Router.HandleLambda for what is retried and what is
// acknowledged. Before it returns, the handler waits for the launches
// engine began, so a frozen execution environment loses none.
//
// Events whose records carry no trace context of their own continue the
// invocation's X-Ray trace when it is sampled (see
// triggers.ContextWithXRay): how EventBridge, S3 and SNS pass a
// producer's trace header to the function.
func TriggerHandler(router *triggers.Router, engine *sortie.Engine, log *slog.Logger) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, event json.RawMessage) (any, error) {
		xray, _ := ctx.Value(xrayContextKey).(string)
		out, err := router.HandleLambda(triggers.ContextWithXRay(ctx, xray), event)
		if werr := engine.WaitLaunches(ctx); werr != nil {
			log.Warn("trigger: launches still pending; the reconciler relaunches them", "err", werr)
		}
		return out, err
	}
}
