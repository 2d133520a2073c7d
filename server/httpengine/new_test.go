package httpengine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/server/httpengine"
)

// A host URL New refuses is never echoed with its password: a malformed
// one is not quoted at all, another is quoted redacted.
func TestNewNeverEchoesAPassword(t *testing.T) {
	for _, raw := range []string{
		"ftp://ops:hunter2-secret@host:7780",
		"ops:hunter2-secret@host:7780",
		"http://ops:hunter2-secret@host:7780/%zz",
		"http://ops:hunter2-secret@host:7780/?token=x",
	} {
		_, err := httpengine.New(raw, nil)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "host" || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("New(a bad URL with a password) = %v, want a ValidationError naming host, without the password", err)
		}
	}
	if _, err := httpengine.New("http://127.0.0.1:7780/prefix/", nil); err != nil {
		t.Errorf("New(a good URL) = %v, want nil", err)
	}
}

// A host URL with user info is refused (it would go out as HTTP Basic
// auth and be echoed in hints), saying where credentials go instead; so is
// a port out of range.
func TestNewRefusesUserInfoAndBadPort(t *testing.T) {
	for raw, want := range map[string]string{
		"http://alice:s3cretPW@127.0.0.1:7780": "--token-file",
		"http://alice@127.0.0.1:7780":          "user info",
		"http://127.0.0.1:99999":               "1-65535",
		"http://127.0.0.1:0":                   "1-65535",
	} {
		_, err := httpengine.New(raw, nil)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "host" || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cretPW") {
			t.Errorf("New(%q) = %v, want a ValidationError naming host, saying %q, without the password", raw, err, want)
		}
	}
}
