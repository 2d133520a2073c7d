package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sortie-run/sortie"
)

// Provider is the [sortie.Ref] provider of this launcher.
const Provider = "lambda"

// DefaultMaxPayloadBytes is Lambda's asynchronous Invoke payload limit,
// 1 MB (1,048,576 bytes), per the AWS Lambda quotas page.
const DefaultMaxPayloadBytes = 1 << 20

// DefaultMaxEventAge is Lambda's default maximum event age of
// asynchronous invocations, 6 hours, which is also its largest ("How
// Lambda handles errors and retries with asynchronous invocation":
// throttled events are retried for up to 6 hours, the interval growing
// from 1 second to 5 minutes).
const DefaultMaxEventAge = 6 * time.Hour

// API is the part of the Lambda client the launcher uses; *lambda.Client
// implements it.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Options configures a [Launcher].
type Options struct {
	// Function is the worker function's name, ARN or partial ARN, with an
	// optional qualifier (alias or version). Required.
	Function string
	// Qualifier is the version or alias to invoke. Optional; defaults to
	// the function's unqualified ($LATEST or the ARN's qualifier).
	Qualifier string
	// Region and Account are recorded on each [sortie.Ref]. Optional.
	Region  string
	Account string
	// MaxPayloadBytes is the largest invocation JSON sent, in bytes.
	// Optional; defaults to [DefaultMaxPayloadBytes] (1 MB).
	MaxPayloadBytes int
	// MaxEventAge is the worker function's maximum event age
	// (MaximumEventAgeInSeconds of its asynchronous invocation
	// configuration): how long Lambda may hold an accepted invocation in
	// its queue, retrying while the function is throttled, before it
	// discards it to the on-failure destination. The engine adds it to the
	// run's start timeout ([sortie.Queuer]), so a throttled queue does not
	// burn attempts. Optional; defaults to [DefaultMaxEventAge] (6 h).
	MaxEventAge time.Duration
}

// Launcher starts attempts as asynchronous Lambda invocations. It
// implements [sortie.Launcher], [sortie.Queuer] (the queue age is
// Options.MaxEventAge) and [sortie.InvocationLimiter]; it is neither a [sortie.Canceler] nor a
// [sortie.Describer]: Lambda can neither stop nor describe an invocation.
type Launcher struct {
	api  API
	opts Options
}

var (
	_ sortie.Launcher          = (*Launcher)(nil)
	_ sortie.Queuer            = (*Launcher)(nil)
	_ sortie.InvocationLimiter = (*Launcher)(nil)
)

// MaxInvocationBytes implements [sortie.InvocationLimiter]:
// Options.MaxPayloadBytes, Lambda's asynchronous payload limit (1 MB) by
// default, so the engine refuses a larger invocation at submit.
func (l *Launcher) MaxInvocationBytes() (int, string) {
	return l.opts.MaxPayloadBytes, "the Lambda asynchronous invocation payload (max_payload_bytes)"
}

// New returns a launcher that invokes opts.Function through api. It
// returns a [*sortie.ValidationError] when Function is empty, or
// MaxPayloadBytes or MaxEventAge is negative or above its default.
func New(api API, opts Options) (*Launcher, error) {
	if api == nil {
		return nil, sortie.Invalidf("api", "a Lambda client is required")
	}
	if opts.Function == "" || len(opts.Function) > 170 {
		return nil, sortie.Invalidf("function", "a function name or ARN of 1-170 bytes is required")
	}
	if opts.MaxPayloadBytes < 0 || opts.MaxPayloadBytes > DefaultMaxPayloadBytes {
		return nil, sortie.Invalidf("max_payload_bytes", "%d outside 0..%d (0 means the default)", opts.MaxPayloadBytes, DefaultMaxPayloadBytes)
	}
	if opts.MaxPayloadBytes == 0 {
		opts.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if opts.MaxEventAge < 0 || opts.MaxEventAge > DefaultMaxEventAge {
		return nil, sortie.Invalidf("max_event_age", "%v outside 0..%v (0 means the default)", opts.MaxEventAge, DefaultMaxEventAge)
	}
	if opts.MaxEventAge == 0 {
		opts.MaxEventAge = DefaultMaxEventAge
	}
	return &Launcher{api: api, opts: opts}, nil
}

// MaxQueueMs implements [sortie.Queuer]: the function's maximum event age,
// in ms.
func (l *Launcher) MaxQueueMs() int64 { return l.opts.MaxEventAge.Milliseconds() }

// Start sends inv as an asynchronous invocation (InvocationType Event) and
// returns a Ref whose ID is the Lambda request ID. An invocation whose JSON
// is over MaxPayloadBytes is refused before sending with a
// [*sortie.ValidationError] (field "invocation") naming the limit; see the
// package documentation for how SDK errors map to the sentinels.
func (l *Launcher) Start(ctx context.Context, inv *sortie.Invocation) (sortie.Ref, error) {
	payload, err := json.Marshal(inv)
	if err != nil {
		return sortie.Ref{}, fmt.Errorf("lambda: encode invocation of run %s: %w", inv.RunID, err)
	}
	if len(payload) > l.opts.MaxPayloadBytes {
		return sortie.Ref{}, sortie.Invalidf("invocation", "%d bytes of JSON, over the Lambda asynchronous payload limit of %d bytes (max_payload_bytes)",
			len(payload), l.opts.MaxPayloadBytes)
	}
	in := &lambda.InvokeInput{FunctionName: aws.String(l.opts.Function), InvocationType: types.InvocationTypeEvent, Payload: payload}
	if l.opts.Qualifier != "" {
		in.Qualifier = aws.String(l.opts.Qualifier)
	}
	out, err := l.api.Invoke(ctx, in)
	if err != nil {
		return sortie.Ref{}, classify(fmt.Sprintf("lambda: invoke %s for run %s attempt %d", l.opts.Function, inv.RunID, inv.Attempt), err)
	}
	return l.ref(inv, out), nil
}

// ref builds the attempt's Ref. When the service returned no request ID
// (the Runtime Interface Emulator sends none), ID is "launch:" and the
// launch ID, which the worker's logs also carry.
func (l *Launcher) ref(inv *sortie.Invocation, out *lambda.InvokeOutput) sortie.Ref {
	id, _ := awsmw.GetRequestIDMetadata(out.ResultMetadata)
	if id == "" {
		id = "launch:" + inv.LaunchID
	}
	ref := sortie.Ref{Provider: Provider, Account: l.opts.Account, Region: l.opts.Region, Resource: l.opts.Function,
		ID: id, RunID: inv.RunID, Attempt: inv.Attempt, LaunchID: inv.LaunchID}
	ref.Detail = map[string]string{"status_code": strconv.Itoa(int(out.StatusCode))}
	if l.opts.Qualifier != "" {
		ref.Detail["qualifier"] = l.opts.Qualifier
	}
	return ref
}

// classify wraps err once with op and the sentinel its kind maps to.
func classify(op string, err error) error {
	var (
		tooMany  *types.TooManyRequestsException
		notFound *types.ResourceNotFoundException
		badParam *types.InvalidParameterValueException
		tooLarge *types.RequestTooLargeException
		apiErr   smithy.APIError
		respErr  *smithyhttp.ResponseError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &tooMany):
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrThrottled, err)
	case errors.As(err, &notFound):
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrNotFound, err)
	case errors.As(err, &badParam), errors.As(err, &tooLarge):
		return fmt.Errorf("%s: %w: %w", op, sortie.Invalidf("invocation", "Lambda refused it"), err)
	case errors.As(err, &apiErr) && (apiErr.ErrorFault() == smithy.FaultServer || throttling(apiErr.ErrorCode())):
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	case errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500:
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w: %w", op, sortie.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// throttling reports whether code is one of Lambda's throttling or
// capacity error codes.
func throttling(code string) bool {
	switch code {
	case "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded",
		"EC2ThrottledException", "ServiceException", "ResourceNotReadyException", "ResourceConflictException":
		return true
	}
	return false
}
