package awskms_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
)

// A keyring of two AWS KMS keys during a rotation, with the data-key
// cache on, and the Config that the engine (its Sealer) and the worker
// (its opener) use.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("eu-west-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	oldKEK, err := awskms.NewFromConfig(cfg, "arn:aws:kms:eu-west-1:111122223333:key/0b0e5a2c-5a6f-4c8e-9d31-6a1f2b3c4d5e")
	if err != nil {
		fmt.Println(err)
		return
	}
	newKEK, err := awskms.NewFromConfig(cfg, "arn:aws:kms:eu-west-1:111122223333:key/7c9d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f")
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, err := envelope.NewKeyring("aws-2025", oldKEK)
	if err == nil {
		err = ring.Add("aws-2026", newKEK)
	}
	if err == nil {
		err = ring.SetPrimary("aws-2026")
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	keeper := envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{MaxUses: 500}})
	_ = envelope.NewConfig(keeper)
	fmt.Println(ring.Primary(), ring.IDs())
	// Output: aws-2026 [aws-2025 aws-2026]
}
