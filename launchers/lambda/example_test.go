package lambda_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/launchers/lambda"
)

// A launcher of the worker function, with a smaller payload budget; an
// invocation over it is refused before anything is sent.
func Example() {
	client := awslambda.New(awslambda.Options{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}})
	l, err := lambda.New(client, lambda.Options{Function: "sortie-worker", Qualifier: "live", Region: "eu-west-1", MaxPayloadBytes: 256})
	if err != nil {
		fmt.Println(err)
		return
	}
	inv := &sortie.Invocation{Version: sortie.InvocationVersion, RunID: "01JRUN0000000000000000000A", Attempt: 1,
		LaunchID: "01JLAUNCH000000000000000AA", Variables: []byte(`{"text":"` + strings.Repeat("x", 300) + `"}`)}
	_, err = l.Start(context.Background(), inv)
	fmt.Println(errors.Is(err, sortie.ErrInvalidArgument))
	// Output: true
}
