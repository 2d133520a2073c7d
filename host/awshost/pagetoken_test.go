package awshost_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/controlplanetest"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// Hosts of one deployment sign page tokens with one key, whether a host
// has it in the clear or sealed by the deployment's KMS key: a token made
// by one continues on the other. A host without the key refuses it
// naming another deployment; a sealed key with another purpose does not
// open.
func TestPageTokenKeyShared(t *testing.T) {
	endpoint, table := useDynamoDBLocal(t)
	ctx := t.Context()
	kmsSrv := localkms.Shared(t)
	text := base64.StdEncoding.EncodeToString([]byte("page-token-key-of-this-deployment"))
	key, err := awshost.ParsePageTokenKey(awshost.EnvPageTokenKey, text)
	if err != nil {
		t.Fatalf("ParsePageTokenKey = %v", err)
	}
	seal := func(purpose string) []byte {
		out, err := kmsSrv.Client().Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(localkms.ARN(localkms.KeyA)), Plaintext: []byte(text),
			EncryptionContext: map[string]string{"purpose": purpose}})
		if err != nil {
			t.Fatalf("KMS Encrypt = %v", err)
		}
		return out.CiphertextBlob
	}
	open := func(cfg awshost.Config) (*awshost.Host, error) {
		cfg.Table, cfg.DynamoEndpoint, cfg.KMSEndpoint = table, endpoint, kmsSrv.Endpoint
		h, err := awshost.Open(ctx, cfg)
		if err == nil {
			t.Cleanup(func() { h.Close() })
		}
		return h, err
	}
	plain, err := open(awshost.Config{PageTokenKey: key})
	if err != nil {
		t.Fatalf("Open(PageTokenKey) = %v", err)
	}
	sealed, err := open(awshost.Config{SealedPageTokenKey: seal(awshost.PageTokenPurpose)})
	if err != nil {
		t.Fatalf("Open(SealedPageTokenKey) = %v", err)
	}
	none, err := open(awshost.Config{})
	if err != nil {
		t.Fatalf("Open(no page-token key) = %v", err)
	}
	if !plain.SharedPageTokens() || !sealed.SharedPageTokens() || none.SharedPageTokens() {
		t.Errorf("SharedPageTokens = %v, %v, %v; want true with either form of the key, false without", plain.SharedPageTokens(), sealed.SharedPageTokens(), none.SharedPageTokens())
	}
	for i := range 3 {
		run := controlplanetest.NewRun(controlplanetest.T0 + int64(i))
		if _, _, err := plain.ControlPlane.Reserve(ctx, &sortie.Reservation{Run: run, NowMs: controlplanetest.T0 + int64(i)}); err != nil {
			t.Fatalf("Reserve = %v", err)
		}
	}
	page, err := plain.ControlPlane.List(ctx, sortie.ListQuery{PageSize: 2})
	if err != nil || page.NextPageToken == "" {
		t.Fatalf("List(2) = %v, %v, want a next page", page, err)
	}
	next, err := sealed.ControlPlane.List(ctx, sortie.ListQuery{PageSize: 2, PageToken: page.NextPageToken})
	if err != nil || len(next.Runs) != 1 {
		t.Errorf("List(page 2) on the host with the sealed key = %v, %v, want the third run", next, err)
	}
	if _, err := none.ControlPlane.List(ctx, sortie.ListQuery{PageSize: 2, PageToken: page.NextPageToken}); !errors.Is(err, sortie.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "another deployment") {
		t.Errorf("List(page 2) on a host without the key = %v, want a refusal naming another deployment", err)
	}
	if _, err := open(awshost.Config{SealedPageTokenKey: seal("invocation-config")}); err == nil || !strings.Contains(err.Error(), awshost.PageTokenPurpose) {
		t.Errorf("Open(a key sealed for another purpose) = %v, want an error naming purpose %s", err, awshost.PageTokenPurpose)
	}
	for _, bad := range []string{"c2hvcnQ=", "not base64 !"} {
		if _, err := awshost.ParsePageTokenKey(awshost.EnvPageTokenKey, bad); !errors.Is(err, sortie.ErrInvalidArgument) || strings.Contains(err.Error(), bad) {
			t.Errorf("ParsePageTokenKey(%q) = %v, want ErrInvalidArgument not quoting the value", bad, err)
		}
	}
}
