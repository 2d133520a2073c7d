package s3presign

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/payload/sealed"
)

// Options configures a [Signer]. A nil *Options means the defaults.
type Options struct {
	// Region is the bucket's region when its URL names none (the SDK's
	// AWS_REGION). Optional; defaults to none: the URL must name one.
	Region string
	// Limits are the store's limits, carried in the URLs a Granter
	// grants (the per-payload maximum). Optional; defaults to the
	// [sortie.PayloadLimits] defaults.
	Limits sortie.PayloadLimits
}

// Signer signs presigned URLs of one S3 bucket's objects with
// credentials. It is safe for concurrent use.
type Signer struct {
	name   string
	region string
	base   url.URL // the URL of the bucket's objects, without the key
	creds  aws.CredentialsProvider
	limits sortie.PayloadLimits
	v4     *v4.Signer
	now    func() time.Time
}

var _ sealed.URLSigner = (*Signer)(nil)

// New returns the Signer of the bucket at bucketURL, a gocloud.dev/blob
// s3:// URL as package payload's OpenURL takes it, signing with creds. A
// URL that is not s3://BUCKET, names no region (nor opts.Region), or
// holds a parameter the Signer cannot follow (profile, role, anonymous,
// fips, accelerate) is a [*sortie.ValidationError] naming
// payload_bucket.
func New(bucketURL string, creds aws.CredentialsProvider, opts *Options) (*Signer, error) {
	if opts == nil {
		opts = &Options{}
	}
	u, err := url.Parse(bucketURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, sortie.Invalidf("payload_bucket", "%.200q must be an S3 bucket URL such as s3://BUCKET?region=REGION", sortie.SafeURL(bucketURL))
	}
	p, err := parseParams(u.Query())
	if err != nil {
		return nil, err
	}
	if p.region == "" {
		p.region = opts.Region
	}
	if p.region == "" {
		return nil, sortie.Invalidf("payload_bucket", "s3://%s names no region (add ?region=REGION)", u.Host)
	}
	base, err := p.bucketURL(u.Host)
	if err != nil {
		return nil, err
	}
	return &Signer{name: "s3://" + u.Host, region: p.region, base: *base, creds: creds,
		limits: opts.Limits.WithDefaults(), v4: v4.NewSigner(), now: time.Now}, nil
}

// Name implements sealed.URLSigner: "s3://BUCKET", as package payload
// names the store.
func (s *Signer) Name() string { return s.name }

// Limits implements sealed.URLSigner.
func (s *Signer) Limits() sortie.PayloadLimits { return s.limits }

// SignURL implements sealed.URLSigner: a GET URL as s3's
// PresignGetObject makes it, a PUT URL as PresignPutObject does, a DELETE
// URL as PresignDeleteObject does (the reconciler's retention deletes an
// expired run's objects with them: sealed.Deleter), valid for life
// (rounded down to the second; at most 7 days). Another method is
// refused; a failure to retrieve the credentials wraps
// sortie.ErrUnavailable.
func (s *Signer) SignURL(ctx context.Context, method, key string, life time.Duration) (string, error) {
	q := url.Values{"X-Amz-Expires": {strconv.FormatInt(int64(life/time.Second), 10)}}
	switch method {
	case http.MethodGet:
		q.Set("x-id", "GetObject")
		q.Set("X-Amz-Checksum-Mode", "ENABLED")
	case http.MethodPut:
		q.Set("x-id", "PutObject")
	case http.MethodDelete:
		q.Set("x-id", "DeleteObject")
	default:
		return "", fmt.Errorf("payload store %q: sign a %.10q URL for %s: only GET, PUT and DELETE are signed", s.name, method, key)
	}
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("payload store %q: sign a %s URL for %s: credentials: %v: %w", s.name, method, key, err, sortie.ErrUnavailable)
	}
	u := s.base
	u.Path += "/" + key
	u.RawPath = u.EscapedPath() + "/" + httpbinding.EscapePath(key, false)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("payload store %q: sign a %s URL for %s: %v", s.name, method, key, err)
	}
	signed, _, err := s.v4.PresignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", s.region, s.now().UTC(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		return "", fmt.Errorf("payload store %q: sign a %s URL for %s: %v: %w", s.name, method, key, err, sortie.ErrUnavailable)
	}
	return signed, nil
}

// params are the bucket URL's parameters that shape its objects' URLs.
type params struct {
	region, endpoint                              string
	pathStyle, hostnameImmutable, http, dualStack bool
}

// ignored are s3blob's and gocloud.dev/aws's parameters that change
// nothing in a presigned URL.
var ignored = map[string]bool{"ssetype": true, "kmskeyid": true, "rate_limiter_capacity": true, "awssdk": true}

func parseParams(q url.Values) (*params, error) {
	p := &params{region: q.Get("region"), endpoint: q.Get("endpoint")}
	flags := map[string]*bool{"use_path_style": &p.pathStyle, "s3ForcePathStyle": &p.pathStyle,
		"hostname_immutable": &p.hostnameImmutable, "disable_https": &p.http, "dualstack": &p.dualStack}
	for k, v := range q {
		if f, ok := flags[k]; ok {
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, sortie.Invalidf("payload_bucket", "parameter %.40q is not a boolean (true or false)", k)
			}
			*f = *f || b
		} else if k != "region" && k != "endpoint" && !ignored[k] {
			return nil, sortie.Invalidf("payload_bucket", "parameter %.40q is not one the Lambda function's URL signer follows (region, endpoint, use_path_style, hostname_immutable, disable_https, dualstack)", k)
		}
	}
	return p, nil
}
