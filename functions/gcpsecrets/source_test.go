package gcpsecrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/gcpsecrets"
	"github.com/sortie-run/sortie/testrig/secretstores"
)

const secret = "projects/p/secrets/github"

// client is a Secret Manager client of the in-process server at endpoint.
func client(t *testing.T, endpoint string) *secretmanager.Client {
	t.Helper()
	c, err := secretmanager.NewClient(context.Background(), option.WithEndpoint(endpoint), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSecretReadsTheLatestVersion(t *testing.T) {
	srv := secretstores.StartGCP(t, map[string]string{secret: "ghp_canary"})
	src := gcpsecrets.New(client(t, srv.Endpoint))
	for _, name := range []string{secret, secret + "/versions/1"} {
		got, err := src.Secret(context.Background(), name)
		if err != nil || string(got) != "ghp_canary" {
			t.Errorf("Secret(%s) = %q, %v; want the payload", name, got, err)
		}
	}
	if asked := srv.Asked(); len(asked) != 2 || asked[0] != secret+"/versions/latest" {
		t.Errorf("server was asked for %v, want the latest version first", asked)
	}
}

func TestErrorsKeepTheCodeOnly(t *testing.T) {
	srv := secretstores.StartGCP(t, nil)
	_, err := gcpsecrets.New(client(t, srv.Endpoint)).Secret(context.Background(), secret)
	var se *functions.SecretError
	if !errors.As(err, &se) || se.Code != "NotFound" || !errors.Is(err, sortie.ErrNotFound) {
		t.Fatalf("Secret(unknown) = %v, want a SecretError NotFound wrapping ErrNotFound", err)
	}
	if strings.Contains(err.Error(), "github") {
		t.Errorf("Secret(unknown) error %q names the secret", err)
	}
}
