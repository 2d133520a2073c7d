package gcpkms_test

import (
	"context"
	"fmt"

	kms "cloud.google.com/go/kms/apiv1"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/gcpkms"
)

// A keyring whose primary key is a Cloud KMS key, and the Config that
// the engine (Sealer) and the worker (opener) use.
func Example() {
	ctx := context.Background()
	client, err := kms.NewKeyManagementClient(ctx) // Application Default Credentials
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	kek, err := gcpkms.New(client, "projects/my-project/locations/europe-west1/keyRings/sortie/cryptoKeys/config")
	if err != nil {
		fmt.Println(err)
		return
	}
	ring, err := envelope.NewKeyring("gcp-2026-01", kek)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = envelope.NewConfig(envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}}))
}
