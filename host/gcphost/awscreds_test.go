package gcphost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/host/gcphost"
	"github.com/sortie-run/sortie/testrig/awsfed"
)

const testRole = "arn:aws:iam::111122223333:role/sortie-cloudrun-worker"

// federation starts the metadata server and an STS endpoint whose role
// trusts tokens for audience, issuing credentials that last lifetime, and
// returns them with the STS client's configuration.
func federation(t *testing.T, audience string, lifetime time.Duration) (*awsfed.Metadata, *awsfed.STS, aws.Config) {
	t.Helper()
	md := awsfed.StartMetadata(t)
	t.Setenv("GCE_METADATA_HOST", md.Host)
	sts := awsfed.StartSTS(t, awsfed.STSOptions{Lifetime: lifetime,
		Check: func(tok string) error { return md.Check(tok, audience) }})
	cfg := aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String(sts.Endpoint), RetryMaxAttempts: 1}
	return md, sts, cfg
}

// The provider exchanges a metadata-server ID token for the role's
// credentials, then serves them from its cache while they are fresh.
func TestAWSCredentialsFromIDToken(t *testing.T) {
	md, sts, cfg := federation(t, fncloudrun.DefaultAWSTokenAudience, time.Hour)
	p, err := gcphost.AWSCredentials(cfg, gcphost.AWSFederation{RoleARN: testRole, SessionName: "sortie-test"})
	if err != nil {
		t.Fatalf("AWSCredentials = %v", err)
	}
	first, err := p.Retrieve(context.Background())
	if err != nil {
		t.Fatalf("Retrieve() = %v", err)
	}
	calls := sts.Calls()
	if len(calls) != 1 || calls[0].RoleARN != testRole || calls[0].SessionName != "sortie-test" ||
		md.Check(calls[0].Token, fncloudrun.DefaultAWSTokenAudience) != nil {
		t.Fatalf("STS calls = %+v, want one AssumeRoleWithWebIdentity of %s with a metadata token for %s", calls, testRole, fncloudrun.DefaultAWSTokenAudience)
	}
	if first.AccessKeyID != "ASIAFEDERATEDTEST" || first.SessionToken != calls[0].Issued || !first.CanExpire || !first.Expires.After(time.Now()) {
		t.Errorf("Retrieve() = %+v, want the issued credentials, expiring in the future", first)
	}
	again, err := p.Retrieve(context.Background())
	if err != nil || again.SessionToken != first.SessionToken || len(sts.Calls()) != 1 || md.Requests() != 1 {
		t.Errorf("second Retrieve() = %+v, %v with %d STS calls; want the cached credentials and no new call", again, err, len(sts.Calls()))
	}
}

// Credentials that expire within the expiry window are replaced before
// they expire: the next Retrieve fetches a new ID token and new
// credentials while the old ones are still valid.
func TestAWSCredentialsRefreshBeforeExpiry(t *testing.T) {
	md, sts, cfg := federation(t, "sortie-aws", 10*time.Minute)
	p, err := gcphost.AWSCredentials(cfg, gcphost.AWSFederation{RoleARN: testRole, Audience: "sortie-aws", ExpiryWindow: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.Retrieve(context.Background())
	if err != nil {
		t.Fatalf("Retrieve() = %v", err)
	}
	second, err := p.Retrieve(context.Background())
	if err != nil {
		t.Fatalf("second Retrieve() = %v", err)
	}
	calls := sts.Calls()
	if len(calls) != 2 || md.Requests() != 2 || first.SessionToken != calls[0].Issued || second.SessionToken != calls[1].Issued {
		t.Fatalf("two Retrieves of credentials expiring within the 15 min window = sessions %s, %s with STS calls %+v and %d tokens; want two exchanges",
			first.SessionToken, second.SessionToken, calls, md.Requests())
	}
	if !calls[0].Expires.After(time.Now()) {
		t.Errorf("the first credentials expired at %v before the refresh; want them replaced while still valid", calls[0].Expires)
	}
	if !strings.HasPrefix(calls[0].SessionName, "sortie-") {
		t.Errorf("default session name = %q, want sortie-HOSTNAME", calls[0].SessionName)
	}
}

// A role that does not trust the token's audience refuses it: Retrieve
// fails with STS's error, and the token is in no error.
func TestAWSCredentialsRefused(t *testing.T) {
	_, sts, cfg := federation(t, "other-audience", time.Hour)
	p, err := gcphost.AWSCredentials(cfg, gcphost.AWSFederation{RoleARN: testRole})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Retrieve(context.Background())
	calls := sts.Calls()
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || len(calls) != 1 || calls[0].Issued != "" {
		t.Fatalf("Retrieve() with a token the role does not trust = %v (STS calls %+v), want AccessDenied", err, calls)
	}
	if strings.Contains(err.Error(), calls[0].Token) {
		t.Errorf("Retrieve() error %q carries the ID token", err)
	}
	if _, err := gcphost.AWSCredentials(cfg, gcphost.AWSFederation{}); !errors.Is(err, sortie.ErrInvalidArgument) {
		t.Errorf("AWSCredentials without RoleARN = %v, want sortie.ErrInvalidArgument", err)
	}
}
