package payload

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/sortie-run/sortie"
)

// OpenFile returns a Store on a fileblob bucket in dir (created with mode
// 0700 when missing), named "file" in references: the embedded default,
// in the state directory. Its directories are 0700 and its objects 0600,
// as the rest of the state directory; it writes no metadata files. Close
// the returned bucket after the Store's last use.
func OpenFile(dir string, sealer Sealer, opts *Options) (*Store, *blob.Bucket, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("payload store: create %s: %w", dir, err)
	}
	// fileblob creates files 0666 (less the umask) and has no option for
	// it: Put's [ownerOnly] narrows each object, and the metadata
	// sidecar files (only a content type, made with os.Create) are skipped.
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{DirFileMode: 0o700, NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, nil, fmt.Errorf("payload store: open %s: %w", dir, err)
	}
	s := New(b, "file", sealer, opts)
	s.dir = dir
	return s, b, nil
}

// OpenURL returns a Store on the bucket at a gocloud.dev/blob URL, for
// example "s3://BUCKET?region=eu-west-1" (the binary must import the
// driver, as cmd/sortie imports s3blob and gcsblob), named SCHEME://BUCKET in
// references. A file:// URL is refused: use [OpenFile]. Close the
// returned bucket after the Store's last use.
func OpenURL(ctx context.Context, rawURL string, sealer Sealer, opts *Options) (*Store, *blob.Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Scheme == "file" {
		return nil, nil, sortie.Invalidf("payload_bucket", "%.200q must be a bucket URL such as s3://BUCKET (without user info)", sortie.SafeURL(rawURL))
	}
	if u.User != nil {
		return nil, nil, sortie.Invalidf("payload_bucket", "%s://%s must not carry user info (NAME:PASSWORD@)", u.Scheme, u.Host)
	}
	if !blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
		return nil, nil, sortie.Invalidf("payload_bucket", "%s://%s: no storage driver for %s:// in this program; want a bucket URL of %s",
			u.Scheme, u.Host, u.Scheme, bucketSchemes())
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, nil, openError(u, rawURL, err)
	}
	return New(b, u.Scheme+"://"+u.Host, sealer, opts), b, nil
}

// bucketSchemes lists the schemes OpenURL takes: those of the bucket
// drivers the program imports, file:// left out.
func bucketSchemes() string {
	var out []string
	for _, s := range blob.DefaultURLMux().BucketSchemes() {
		if s != "file" {
			out = append(out, s+"://")
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// openError describes a driver's failure to open the bucket at u without
// its query, which the driver's error quotes whole and which may hold a
// credential (a signature, a key). A query parameter the driver refuses
// is a [*sortie.ValidationError] naming that parameter, not its value.
func openError(u *url.URL, rawURL string, err error) error {
	where := u.Scheme + "://" + u.Host
	msg := err.Error()
	for k := range u.Query() {
		if strings.Contains(msg, fmt.Sprintf("parameter %q", k)) {
			return sortie.Invalidf("payload_bucket", "%s: query parameter %.40q is not one the %s:// driver takes", where, k, u.Scheme)
		}
	}
	secrets := []string{rawURL, u.RawQuery, u.Fragment}
	for _, vs := range u.Query() {
		secrets = append(secrets, vs...)
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "…")
		}
	}
	return &redactedError{msg: "payload store: open " + where + ": " + msg, err: err}
}

// redactedError is err (for errors.Is and As) told as msg.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
