package keyring_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/crypto/keyring"
)

// ParseList keeps the order (the first is primary), trims spaces, reads a
// blank value as no keys and names the field of an entry that is not
// ID=KEY.
func TestParseList(t *testing.T) {
	got, err := keyring.ParseList("F", " k2=projects/p/x , k1=arn:aws:kms:r:1:key/a")
	want := [][2]string{{"k2", "projects/p/x"}, {"k1", "arn:aws:kms:r:1:key/a"}}
	if d := cmp.Diff(want, got); d != "" || err != nil {
		t.Errorf("ParseList(two keys) = %v (-want +got):\n%s", err, d)
	}
	if got, err := keyring.ParseList("F", " "); got != nil || err != nil {
		t.Errorf("ParseList(blank) = %v, %v; want nil, nil", got, err)
	}
	for _, v := range []string{"=key", "id=", "a=k,,b=k", "no-equals"} {
		_, err := keyring.ParseList("--kms-keys", v)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "--kms-keys" {
			t.Errorf("ParseList(--kms-keys, %q) = %v, want a *sortie.ValidationError naming --kms-keys", v, err)
		}
	}
}
