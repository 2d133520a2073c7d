package awssecrets_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
)

// A worker resolves the "aws_secret" references of its allowlist with
// Secrets Manager.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	refs, err := functions.LoadConfigRefs(`{"version": "sortie.configrefs/v1", "refs": {
		"stripe": {"var": "STRIPE_KEY", "aws_secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"}}}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	refs.Secrets = map[string]functions.SecretSource{functions.SourceAWSSecret: awssecrets.New(secretsmanager.NewFromConfig(cfg))}
	w := &functions.Worker{ConfigRefs: refs}
	fmt.Println(w.ConfigRefs.Names(functions.SourceAWSSecret))
	// Output:
	// [arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC]
}
