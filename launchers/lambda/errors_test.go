package lambda_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// The SDK's error types map to the sentinels and stay in the chain.
func TestClassifySDKErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"throttled", &types.TooManyRequestsException{Message: aws.String("rate")}, sortie.ErrThrottled},
		{"not found", &types.ResourceNotFoundException{Message: aws.String("no function")}, sortie.ErrNotFound},
		{"bad parameter", &types.InvalidParameterValueException{Message: aws.String("bad")}, sortie.ErrInvalidArgument},
		{"too large", &types.RequestTooLargeException{Message: aws.String("big")}, sortie.ErrInvalidArgument},
		{"service fault", &types.ServiceException{Message: aws.String("boom")}, sortie.ErrUnavailable},
		{"generic server fault", &smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}, sortie.ErrUnavailable},
	}
	for _, c := range cases {
		err := lambda.Classify("lambda: invoke f", &smithy.OperationError{ServiceID: "Lambda", OperationName: "Invoke", Err: c.err})
		var api smithy.APIError
		if !errors.Is(err, c.want) || !errors.As(err, &api) {
			t.Errorf("Classify(%s) = %v, want it to wrap %v and keep the SDK's APIError", c.name, err, c.want)
		}
	}
	other := lambda.Classify("lambda: invoke f", &smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient})
	if errors.Is(other, sortie.ErrUnavailable) || errors.Is(other, sortie.ErrInvalidArgument) {
		t.Errorf("Classify(AccessDenied) = %v, want no transient or input sentinel", other)
	}
}

// Start against an endpoint nobody listens on fails with ErrUnavailable
// (a network error, kept in the chain).
func TestStartUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client := awslambda.New(awslambda.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr), RetryMaxAttempts: 1,
		Credentials: aws.AnonymousCredentials{}})
	l, err := lambda.New(client, lambda.Options{Function: "function"})
	if err != nil {
		t.Fatal(err)
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: "01JRUN0000000000000000000A", Attempt: 1, LaunchID: "l1"}
	_, err = l.Start(context.Background(), inv)
	var ne net.Error
	if !errors.Is(err, sortie.ErrUnavailable) || !errors.As(err, &ne) {
		t.Errorf("Start(unreachable endpoint) = %v, want ErrUnavailable wrapping a net.Error", err)
	}
}
