package gcphost

import (
	"context"
	"fmt"

	kms "cloud.google.com/go/kms/apiv1"
	"cloud.google.com/go/kms/apiv1/kmspb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/crypto/gcpkms"
	"github.com/sortie-run/sortie/internal/loopback"
)

// clientOptions are the options of a Google API client of endpoint
// (host:port): none for "" (the API's own endpoint and Application
// Default Credentials); for a loopback address, an emulator's, plaintext
// gRPC without credentials; else that endpoint with the usual
// credentials.
func clientOptions(endpoint string) []option.ClientOption {
	switch {
	case endpoint == "":
		return nil
	case loopback.Host(endpoint):
		return []option.ClientOption{option.WithEndpoint(endpoint), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
	}
	return []option.ClientOption{option.WithEndpoint(endpoint)}
}

// Keyring is an opened Cloud KMS keyring of inline configuration.
type Keyring struct {
	// Config seals (the engine's Sealer) and opens (the worker's opener)
	// inline configuration, with the data-key cache.
	Config *envelope.Config
	api    *clientRef
}

// OpenKeyring opens the keyring of keys, (key ID, Cloud KMS key name
// "projects/P/locations/L/keyRings/R/cryptoKeys/K") pairs with the primary
// first, through one Cloud KMS client of endpoint (see
// functions/cloudrun's EnvKMSEndpoint; "" is Cloud KMS with Application
// Default Credentials). The keys are checked before the client is made; it
// makes no call to Cloud KMS. Without keys it returns nil: inline
// configuration is off. A bad key ID or name is a
// [*sortie.ValidationError] wrapped with the key ID. The caller closes the
// keyring.
func OpenKeyring(ctx context.Context, keys [][2]string, endpoint string) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	api := &clientRef{}
	ring, err := envelope.KeyringOf(keys, func(name string) (envelope.KEK, error) { return gcpkms.New(api, name) })
	if err != nil {
		return nil, fmt.Errorf("gcphost: keyring: %w", err)
	}
	if api.c, err = kms.NewKeyManagementClient(ctx, clientOptions(endpoint)...); err != nil {
		return nil, fmt.Errorf("gcphost: Cloud KMS client: %w", err)
	}
	keeper := envelope.New(ring, &envelope.Options{Cache: &envelope.CacheOptions{}})
	return &Keyring{Config: envelope.NewConfig(keeper), api: api}, nil
}

// Close closes the Cloud KMS client; nil is a no-op.
func (k *Keyring) Close() error {
	if k == nil {
		return nil
	}
	return k.api.c.Close()
}

// clientRef is the gcpkms.API of the keyring's KEKs: the client, made
// once the keys are checked.
type clientRef struct{ c *kms.KeyManagementClient }

func (r *clientRef) Encrypt(ctx context.Context, req *kmspb.EncryptRequest, opts ...gax.CallOption) (*kmspb.EncryptResponse, error) {
	return r.c.Encrypt(ctx, req, opts...)
}

func (r *clientRef) Decrypt(ctx context.Context, req *kmspb.DecryptRequest, opts ...gax.CallOption) (*kmspb.DecryptResponse, error) {
	return r.c.Decrypt(ctx, req, opts...)
}
