package envelope_test

import (
	"os"
	"testing"

	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/testrig/localkms"
)

// TestMain stops the local-kms server that tests start on first use.
func TestMain(m *testing.M) { os.Exit(localkms.Main(m)) }

// awsKEK returns a KEK of a key of the shared local-kms server.
func awsKEK(t testing.TB, keyID string) *awskms.KEK {
	t.Helper()
	k, err := awskms.New(localkms.Shared(t).Client(), keyID)
	if err != nil {
		t.Fatalf("awskms.New(%q) = %v", keyID, err)
	}
	return k
}
