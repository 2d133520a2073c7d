package s3presign_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/s3test"
	"github.com/sortie-run/sortie/payload/s3presign"
)

// The credentials both signers sign with: a session token with
// characters a query must escape, as Lambda's are.
const (
	keyID   = "AKIDPRESIGNTEST"
	secret  = "presign-test-secret"
	session = "IQoJb3JpZ2luX2Vj/session+token=="
)

// sdkCredentials makes the SDK's default chain (which s3blob loads) find
// the test's credentials and nothing else.
func sdkCredentials(t *testing.T) {
	t.Helper()
	missing := filepath.Join(t.TempDir(), "missing") // a fixed path may exist on the machine
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": session,
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_CONFIG_FILE": missing, "AWS_SHARED_CREDENTIALS_FILE": missing,
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
}

func newSigner(t *testing.T, bucketURL string, opts *s3presign.Options) *s3presign.Signer {
	t.Helper()
	s, err := s3presign.New(bucketURL, credentials.NewStaticCredentialsProvider(keyID, secret, session), opts)
	if err != nil {
		t.Fatalf("New(%s) = %v", bucketURL, err)
	}
	return s
}

// For every layout s3blob makes (virtual-hosted, path-style, a bucket
// with dots, China, dual-stack, plain HTTP, an endpoint with and without
// a fixed host name or a base path), the Signer's GET and PUT URLs are
// byte for byte those s3blob's SignedURL makes for the same bucket, key,
// credentials, expiry and signing time: same host, path, parameters and
// signature.
func TestSameURLsAsS3Blob(t *testing.T) {
	sdkCredentials(t)
	key := "runs/01KBFZ4C7S9V0000000000TEST/result-2"
	for _, bucketURL := range []string{
		"s3://my-bucket?region=eu-west-1",
		"s3://my-bucket?region=us-east-1",
		"s3://my.bucket?region=eu-west-1",
		"s3://my.bucket?region=eu-west-1&disable_https=true",
		"s3://sortie.payloads?region=eu-west-1&disable_https=true",
		"s3://My_Bucket?region=eu-west-1",
		"s3://my-bucket?region=cn-north-1",
		"s3://my-bucket?region=eu-west-1&dualstack=true",
		"s3://my-bucket?region=eu-west-1&use_path_style=true",
		"s3://my-bucket?region=eu-west-1&s3ForcePathStyle=true&kmskeyid=k1",
		"s3://my-bucket?region=us-east-1&endpoint=http://127.0.0.1:9000&use_path_style=true&hostname_immutable=true",
		"s3://my-bucket?region=us-east-1&endpoint=http://127.0.0.1:9000&hostname_immutable=true",
		"s3://my-bucket?region=us-east-1&endpoint=https://s3.example.test",
		"s3://my.bucket?region=us-east-1&endpoint=https://s3.example.test",
		"s3://sortie.payloads?region=us-east-1&endpoint=http://s3.example.test",
		"s3://My_Bucket?region=us-east-1&endpoint=https://s3.example.test",
		"s3://127.0.0.1?region=us-east-1&endpoint=http://s3.example.test",
		"s3://my-bucket?region=us-east-1&endpoint=http://localhost:9000/base/&use_path_style=true",
	} {
		b, err := blob.OpenBucket(context.Background(), bucketURL)
		if err != nil {
			t.Fatalf("blob.OpenBucket(%s) = %v", bucketURL, err)
		}
		defer b.Close()
		s := newSigner(t, bucketURL, nil)
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			want, err := b.SignedURL(context.Background(), key, &blob.SignedURLOptions{Method: method, Expiry: 17 * time.Minute})
			if err != nil {
				t.Fatalf("s3blob SignedURL(%s, %s) = %v", bucketURL, method, err)
			}
			u, _ := url.Parse(want)
			at, err := time.Parse("20060102T150405Z", u.Query().Get("X-Amz-Date"))
			if err != nil {
				t.Fatalf("s3blob's URL has no X-Amz-Date: %s", want)
			}
			s3presign.SetNow(s, func() time.Time { return at })
			got, err := s.SignURL(context.Background(), method, key, 17*time.Minute)
			if err != nil || got != want {
				t.Errorf("%s: SignURL(%s) =\n  %s (%v)\nwant s3blob's\n  %s", bucketURL, method, got, err, want)
			}
		}
	}
}

// The Signer's DELETE URLs are byte for byte those the SDK's S3 presign
// client (PresignDeleteObject) makes for the same bucket, key,
// credentials, expiry and signing time, virtual-hosted and path-style
// under an endpoint (s3blob signs no DELETE URL to compare with).
func TestDeleteURLsAsTheSDK(t *testing.T) {
	key := "runs/01KBFZ4C7S9V0000000000TEST/checkpoint-3"
	for bucketURL, o := range map[string]s3.Options{
		"s3://my-bucket?region=eu-west-1": {Region: "eu-west-1"},
		"s3://my-bucket?region=us-east-1&endpoint=http://127.0.0.1:9000&use_path_style=true": {Region: "us-east-1",
			BaseEndpoint: aws.String("http://127.0.0.1:9000"), UsePathStyle: true},
	} {
		o.Credentials = credentials.NewStaticCredentialsProvider(keyID, secret, session)
		req, err := s3.NewPresignClient(s3.New(o)).PresignDeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String("my-bucket"), Key: aws.String(key)},
			s3.WithPresignExpires(17*time.Minute))
		if err != nil || req.Method != http.MethodDelete {
			t.Fatalf("PresignDeleteObject(%s) = %+v, %v", bucketURL, req, err)
		}
		u, _ := url.Parse(req.URL)
		at, err := time.Parse("20060102T150405Z", u.Query().Get("X-Amz-Date"))
		if err != nil {
			t.Fatalf("the SDK's URL has no X-Amz-Date: %s", req.URL)
		}
		s := newSigner(t, bucketURL, nil)
		s3presign.SetNow(s, func() time.Time { return at })
		if got, err := s.SignURL(t.Context(), http.MethodDelete, key, 17*time.Minute); err != nil || got != req.URL {
			t.Errorf("%s: SignURL(DELETE) =\n  %s (%v)\nwant the SDK's\n  %s", bucketURL, got, err, req.URL)
		}
	}
}

// A URL the Signer signs reads, writes and deletes the object on an
// S3-protocol server (path-style under its endpoint), as a worker and the
// reconciler's retention use them; a second DELETE (the object gone) is
// a success too.
func TestURLsReachTheObject(t *testing.T) {
	srv := s3test.Start(t, "payloads")
	s := newSigner(t, srv.SigningBlobURL(), nil)
	key := "runs/01KBFZ4C7S9V0000000000TEST/variables"
	put, err := s.SignURL(t.Context(), http.MethodPut, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("sealed object bytes")
	req, _ := http.NewRequest(http.MethodPut, put, bytes.NewReader(body))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT through the signed URL = %v %v, want 200", resp, err)
	}
	if got := srv.Objects(t)[key]; !bytes.Equal(got, body) {
		t.Fatalf("the bucket holds %q at %s, want %q", got, key, body)
	}
	get, err := s.SignURL(t.Context(), http.MethodGet, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("GET through the signed URL = %d %q, want 200 %q", resp.StatusCode, got, body)
	}
	for range 2 { // S3 answers a DELETE of a missing key with 204 too
		del, err := s.SignURL(t.Context(), http.MethodDelete, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodDelete, del, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE through the signed URL = %v %v, want 204", resp, err)
		}
		resp.Body.Close()
		if _, ok := srv.Objects(t)[key]; ok {
			t.Fatalf("the bucket still holds %s after the DELETE", key)
		}
	}
	if s.Name() != "s3://payloads" || s.Limits() != (sortie.PayloadLimits{}).WithDefaults() {
		t.Errorf("Name, Limits = %q, %+v; want s3://payloads (as package payload names it) and the defaults", s.Name(), s.Limits())
	}
}

// A bucket URL the Signer cannot follow is refused naming payload_bucket
// and what is wrong; a region missing from the URL comes from the
// options.
func TestBadBucketURLs(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider(keyID, secret, "")
	for bucketURL, want := range map[string]string{
		"gs://bucket?region=eu-west-1":                  "S3 bucket URL",
		"s3://?region=eu-west-1":                        "S3 bucket URL",
		"s3://bucket":                                   "names no region",
		"s3://bucket?region=eu-west-1&profile=dev":      `"profile"`,
		"s3://bucket?region=eu-west-1&fips=true":        `"fips"`,
		"s3://bucket?region=eu-west-1&use_path_style=x": "not a boolean",
		"s3://bucket?region=eu-west-1&endpoint=ftp://h": "endpoint",
	} {
		_, err := s3presign.New(bucketURL, creds, nil)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "payload_bucket" || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%s) = %v, want a ValidationError naming payload_bucket and %s", bucketURL, err, want)
		}
	}
	s, err := s3presign.New("s3://bucket", creds, &s3presign.Options{Region: "eu-west-2"})
	if err != nil {
		t.Fatalf("New(s3://bucket, Region eu-west-2) = %v", err)
	}
	if u, _ := s.SignURL(t.Context(), http.MethodGet, "runs/X/variables", time.Minute); !strings.HasPrefix(u, "https://bucket.s3.eu-west-2.amazonaws.com/runs/X/variables?") {
		t.Errorf("SignURL with the options' region = %.80s…, want the eu-west-2 endpoint", u)
	}
	if _, err := s.SignURL(t.Context(), http.MethodPost, "runs/X/variables", time.Minute); err == nil || !strings.Contains(err.Error(), "only GET, PUT and DELETE") {
		t.Errorf("SignURL(POST) = %v, want a refusal naming the methods signed (GET, PUT, DELETE)", err)
	}
}
