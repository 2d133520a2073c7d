package gcphost

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"cloud.google.com/go/compute/metadata"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/sortie-run/sortie"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// DefaultExpiryWindow is how long before they expire AWS credentials from
// [AWSCredentials] are refreshed by default.
const DefaultExpiryWindow = 5 * time.Minute

// identityTimeout bounds one ID token request to the metadata server
// (stscreds asks for the token without a context).
const identityTimeout = 10 * time.Second

// AWSFederation says how a process on Google Cloud gets AWS credentials
// without a stored key: the IAM role it assumes with a Google ID token of
// its service account.
type AWSFederation struct {
	// RoleARN is the IAM role to assume; its trust policy names
	// accounts.google.com and the service account's unique ID. Required.
	RoleARN string
	// Audience is the ID token's audience (the trust policy's
	// accounts.google.com:oaud). Optional; defaults to
	// functions/cloudrun's DefaultAWSTokenAudience.
	Audience string
	// SessionName names the role session in CloudTrail. Optional; defaults
	// to "sortie-" and the host name.
	SessionName string
	// ExpiryWindow is how long before they expire the credentials are
	// refreshed. Optional; defaults to [DefaultExpiryWindow].
	ExpiryWindow time.Duration
	// Metadata is the metadata server's client. Optional; defaults to one
	// of the metadata server (GCE_METADATA_HOST when set, as the client
	// library reads it).
	Metadata *metadata.Client
}

// AWSCredentials returns an AWS credentials provider that fetches an ID
// token of the service account from the metadata server
// (instance/service-accounts/default/identity, audience fed.Audience) and
// exchanges it for the role's temporary credentials with STS
// AssumeRoleWithWebIdentity (aws-sdk-go-v2's stscreds, an unsigned
// request), caching them and fetching new ones fed.ExpiryWindow before they
// expire. stsCfg configures the STS client: its region and endpoint
// (AWS_ENDPOINT_URL_STS) are used, its credentials are not. It makes no
// call until the first Retrieve; a missing RoleARN is a
// [*sortie.ValidationError] naming RoleARN.
func AWSCredentials(stsCfg aws.Config, fed AWSFederation) (*aws.CredentialsCache, error) {
	if fed.RoleARN == "" {
		return nil, sortie.Invalidf("RoleARN", "the IAM role to assume is required")
	}
	if fed.Audience == "" {
		fed.Audience = fncloudrun.DefaultAWSTokenAudience
	}
	if fed.SessionName == "" {
		host, _ := os.Hostname()
		fed.SessionName = sessionName("sortie-" + host)
	}
	if fed.ExpiryWindow <= 0 {
		fed.ExpiryWindow = DefaultExpiryWindow
	}
	if fed.Metadata == nil {
		fed.Metadata = metadata.NewWithOptions(&metadata.Options{})
	}
	tokens := &idTokens{md: fed.Metadata, audience: fed.Audience}
	client := sts.NewFromConfig(stsCfg)
	p := stscreds.NewWebIdentityRoleProvider(client, fed.RoleARN, tokens, func(o *stscreds.WebIdentityRoleOptions) {
		o.RoleSessionName = fed.SessionName
	})
	return aws.NewCredentialsCache(p, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = fed.ExpiryWindow }), nil
}

// sessionName keeps the characters STS allows in a role session name
// ([\w+=,.@-], 2-64 of them), replacing the others with '-'.
func sessionName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' ||
			c == '+' || c == '=' || c == ',' || c == '.' || c == '@' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 64)])
}

// idTokens is the stscreds.IdentityTokenRetriever of the metadata
// server's ID tokens.
type idTokens struct {
	md       *metadata.Client
	audience string
}

// GetIdentityToken implements stscreds.IdentityTokenRetriever. The token
// is a credential: it is never logged, and errors do not carry it.
func (t *idTokens) GetIdentityToken() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), identityTimeout)
	defer cancel()
	path := "instance/service-accounts/default/identity?audience=" + url.QueryEscape(t.audience) + "&format=full"
	tok, err := t.md.GetWithContext(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("gcphost: ID token of the service account for audience %q from the metadata server: %w", t.audience, err)
	}
	if tok == "" {
		return nil, fmt.Errorf("gcphost: the metadata server returned an empty ID token for audience %q", t.audience)
	}
	return []byte(tok), nil
}
