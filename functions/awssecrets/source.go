package awssecrets

import (
	"context"
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
)

// API is the Secrets Manager method the source calls;
// *secretsmanager.Client implements it.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Source reads secrets from Secrets Manager. It is safe for concurrent
// use.
type Source struct {
	api API
}

var _ functions.SecretSource = (*Source)(nil)

// New returns a source calling api.
func New(api API) *Source { return &Source{api: api} }

// unavailable are the error codes a retry may cure.
var unavailable = []string{"InternalServiceError", "ThrottlingException", "RequestTimeout", "ServiceUnavailable"}

// Secret returns the current value (stage AWSCURRENT) of the secret name,
// an ARN or a name: its SecretString, else its SecretBinary. Errors are
// [*functions.SecretError]s: ResourceNotFoundException wraps
// sortie.ErrNotFound; throttling, internal errors and failed requests wrap
// sortie.ErrUnavailable.
func (s *Source) Secret(ctx context.Context, name string) ([]byte, error) {
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
	if err != nil {
		return nil, secretError(ctx, err)
	}
	if out.SecretString != nil {
		return []byte(*out.SecretString), nil
	}
	if out.SecretBinary != nil {
		return out.SecretBinary, nil
	}
	return nil, &functions.SecretError{Code: "EmptySecret"}
}

// secretError keeps an SDK error's code and class, dropping its text
// (which may name the secret).
func secretError(ctx context.Context, err error) error {
	var api smithy.APIError
	switch {
	case ctx.Err() != nil:
		return &functions.SecretError{Code: "Canceled", Err: ctx.Err()}
	case !errors.As(err, &api):
		return &functions.SecretError{Code: "RequestFailed", Err: sortie.ErrUnavailable}
	case api.ErrorCode() == "ResourceNotFoundException":
		return &functions.SecretError{Code: api.ErrorCode(), Err: sortie.ErrNotFound}
	case slices.Contains(unavailable, api.ErrorCode()):
		return &functions.SecretError{Code: api.ErrorCode(), Err: sortie.ErrUnavailable}
	}
	return &functions.SecretError{Code: api.ErrorCode()}
}
