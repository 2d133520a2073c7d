package gcpsecrets_test

import (
	"context"
	"fmt"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/gcpsecrets"
)

// A worker resolves the "gcp_secret" references of its allowlist with
// Secret Manager.
func ExampleNew() {
	ctx := context.Background()
	client, err := secretmanager.NewClient(ctx)
	if err != nil {
		fmt.Println("no credentials here:", err != nil)
		return
	}
	defer client.Close()
	refs := &functions.ConfigRefs{
		Refs:    map[string]functions.ConfigRef{"github": {Var: "GITHUB_TOKEN", Source: functions.SourceGCPSecret, Name: "projects/p/secrets/github"}},
		Secrets: map[string]functions.SecretSource{functions.SourceGCPSecret: gcpsecrets.New(client)},
	}
	_ = &functions.Worker{ConfigRefs: refs}
}
