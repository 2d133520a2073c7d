package cloudrun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/api/idtoken"
)

// IDTokenVerifier accepts requests carrying a Google-signed ID token
// ("Authorization: Bearer TOKEN", signature and expiry checked with
// google.golang.org/api/idtoken) whose audience is one of Audiences (or,
// with OwnRunAppHost, the run.app URL the request came in on) and whose
// verified email is one of Callers. Cloud Run's IAM check (the invoker
// role) already ran before a request reaches the container; this is the
// container's own check, which also holds when the service allows
// unauthenticated invocations or sits behind another front end.
type IDTokenVerifier struct {
	// Audiences are the audiences accepted: the service's URLs (Cloud Run
	// serves a service at https://SERVICE-PROJECT_NUMBER.REGION.run.app
	// and at https://SERVICE-HASH-REGION_CODE.a.run.app; a caller's ID
	// token carries the one it targets) and any custom audiences. At least
	// one, unless OwnRunAppHost.
	Audiences []string
	// OwnRunAppHost also accepts the audience "https://" + the request's
	// Host when that host is a *.run.app name: Cloud Run routes a request
	// to a service by host, so the run.app host a request arrived on is one
	// of the service's own URLs, including the one whose hash is not known
	// before the service exists. Optional; defaults to false.
	OwnRunAppHost bool
	// Callers are the accounts accepted: the email claim of the token
	// (service accounts' emails, or users'), which must be verified.
	// Required: an empty list accepts no caller.
	Callers []string
	// Validator checks signatures. Optional; defaults to idtoken.Validate
	// (Google's public keys over HTTPS).
	Validator *idtoken.Validator
}

// Verify implements [Verifier]. Its errors say why a token was refused
// without quoting it.
func (v *IDTokenVerifier) Verify(ctx context.Context, r *http.Request) error {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return errors.New("no bearer ID token")
	}
	// The audience is checked below, against several.
	var p *idtoken.Payload
	var err error
	if v.Validator != nil {
		p, err = v.Validator.Validate(ctx, token, "")
	} else {
		p, err = idtoken.Validate(ctx, token, "")
	}
	if err != nil {
		return err
	}
	if !v.audienceOK(p.Audience, r.Host) {
		return fmt.Errorf("ID token audience %q is not this service's", p.Audience)
	}
	email, _ := p.Claims["email"].(string)
	verified, _ := p.Claims["email_verified"].(bool)
	if email == "" || !verified || !slices.Contains(v.Callers, email) {
		return fmt.Errorf("caller %q is not an allowed caller of this service", email)
	}
	return nil
}

// audienceOK reports whether aud is one of the accepted audiences.
func (v *IDTokenVerifier) audienceOK(aud, host string) bool {
	if aud == "" {
		return false
	}
	if slices.Contains(v.Audiences, aud) {
		return true
	}
	h := strings.ToLower(host)
	return v.OwnRunAppHost && strings.HasSuffix(h, ".run.app") && !strings.ContainsAny(h, ":/@") &&
		strings.TrimSuffix(aud, "/") == "https://"+h
}
