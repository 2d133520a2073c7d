package sortie_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sortie-run/sortie"
)

// A refused push or callback URL is described by what is wrong, never
// quoted with its password or query (a presigned signature, a token).
func TestRefusedURLNeverEchoesSecrets(t *testing.T) {
	secrets := []string{"hunter2pass", "SECRETSIG"}
	urls := map[string]string{
		"user info":   "https://user:hunter2pass@x.example.com/?X-Amz-Signature=SECRETSIG",
		"scheme":      "ftp://user:hunter2pass@x.example.com/p?X-Amz-Signature=SECRETSIG",
		"scheme only": "ftp://x.example.com/p?X-Amz-Signature=SECRETSIG#SECRETSIG",
		"no host":     "https:///p?X-Amz-Signature=SECRETSIG",
		"relative":    "/hook?X-Amz-Signature=SECRETSIG",
		"unparsable":  "https://x.example.com/%zz?X-Amz-Signature=SECRETSIG",
		"opaque":      "user:hunter2pass@x.example.com:7780",
	}
	for name, raw := range urls {
		push := &sortie.PushConfig{RunID: sortie.NewRunID(time.Now()), ID: "c1", URL: raw}
		for what, err := range map[string]error{"push": push.Validate(), "callback": sortie.CheckHTTPURL("report.callback_url", raw)} {
			var ve *sortie.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("%s %s: got %v, want a ValidationError", what, name, err)
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("%s %s: error %q quotes %q", what, name, err, s)
				}
			}
		}
	}
	err := (&sortie.PushConfig{RunID: sortie.NewRunID(time.Now()), ID: "c1", URL: urls["user info"]}).Validate()
	if !strings.Contains(err.Error(), "user info") {
		t.Errorf("error %q does not say the URL carries user info", err)
	}
	for raw, want := range map[string]string{"": "is required", "/hook?x=SECRETSIG": `"/hook" is not absolute`} {
		if err := sortie.CheckHTTPURL("url", raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHTTPURL(%q) = %v, want it to say %q", raw, err, want)
		}
	}
	err = (&sortie.PushConfig{RunID: sortie.NewRunID(time.Now()), ID: "c1", URL: urls["scheme only"]}).Validate()
	if !strings.Contains(err.Error(), `"ftp://x.example.com/p"`) {
		t.Errorf("error %q does not quote scheme://host/path", err)
	}
}

// A transport error quotes its URL; RedactURLError cuts it to
// scheme://host/path.
func TestRedactURLError(t *testing.T) {
	_, err := http.Get("http://user:PWSECRET@127.0.0.1:1/p?sig=QSECRET")
	if err == nil {
		t.Fatal("GET of a closed port succeeded")
	}
	msg := sortie.RedactURLError(err).Error()
	if strings.Contains(msg, "SECRET") || !strings.Contains(msg, `"http://127.0.0.1:1/p"`) {
		t.Errorf("RedactURLError(...) = %q, want the URL as http://127.0.0.1:1/p only", msg)
	}
}

// A base URL (requests go under it) refuses a query or fragment too,
// without quoting the query; a plain one with a path prefix passes.
func TestCheckBaseURL(t *testing.T) {
	for _, raw := range []string{"https://h.example.com/api?token=SECRETSIG", "https://h.example.com/api?", "https://h.example.com/#x", "https://h.example.com/#"} {
		err := sortie.CheckBaseURL("base_url", raw)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "base_url" || !strings.Contains(ve.Reason, "no query") || strings.Contains(err.Error(), "SECRETSIG") {
			t.Errorf("CheckBaseURL(%q) = %v, want a ValidationError on base_url refusing the query or fragment, not quoting it", raw, err)
		}
	}
	if err := sortie.CheckBaseURL("base_url", "https://h.example.com:8443/prefix/"); err != nil {
		t.Errorf("CheckBaseURL(a plain URL with a path prefix) = %v, want nil", err)
	}
}
