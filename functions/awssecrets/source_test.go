package awssecrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
	"github.com/sortie-run/sortie/testrig/secretstores"
)

const arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"

// client is a Secrets Manager client of the server at url, signing with
// test credentials, one try per call.
func client(url string) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")},
		func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(url) })
}

func TestSecretReadsTheCurrentValue(t *testing.T) {
	srv := secretstores.StartAWS(t, map[string]string{arn: "sk_live_canary"})
	src := awssecrets.New(client(srv.URL))
	got, err := src.Secret(context.Background(), arn)
	if err != nil || string(got) != "sk_live_canary" {
		t.Fatalf("Secret(%s) = %q, %v; want the secret string", arn, got, err)
	}
	if asked := srv.Asked(); len(asked) != 1 || asked[0] != arn {
		t.Errorf("server was asked for %v, want [%s]", asked, arn)
	}
}

func TestErrorsKeepTheCodeOnly(t *testing.T) {
	srv := secretstores.StartAWS(t, nil)
	_, err := awssecrets.New(client(srv.URL)).Secret(context.Background(), arn)
	var se *functions.SecretError
	if !errors.As(err, &se) || se.Code != "ResourceNotFoundException" || !errors.Is(err, sortie.ErrNotFound) {
		t.Fatalf("Secret(unknown) = %v, want a SecretError ResourceNotFoundException wrapping ErrNotFound", err)
	}
	if strings.Contains(err.Error(), "stripe") || strings.Contains(err.Error(), "find") {
		t.Errorf("Secret(unknown) error %q carries more than the code", err)
	}
	_, err = awssecrets.New(client("http://127.0.0.1:1")).Secret(context.Background(), arn)
	if !errors.Is(err, sortie.ErrUnavailable) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("Secret(no server) = %v, want ErrUnavailable with the code only", err)
	}
}
