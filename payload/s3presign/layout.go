package s3presign

import (
	"net"
	"net/url"
	"strings"

	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sortie-run/sortie"
)

// bucketURL returns the URL of bucket's objects (the key goes after it,
// past a "/"), laid out as the SDK's S3 endpoint rules lay it out for the
// parameters: virtual-hosted when use_path_style and hostname_immutable
// are not set and the bucket's name is a host label (labels when the
// endpoint is plain HTTP), else path-style; under the endpoint when there
// is one, else under s3[.dualstack].REGION.amazonaws.com (.com.cn in
// China).
func (p *params) bucketURL(bucket string) (*url.URL, error) {
	if p.endpoint != "" {
		e, err := url.Parse(p.endpoint)
		if err != nil || (e.Scheme != "https" && e.Scheme != "http") || e.Host == "" || e.RawQuery != "" || e.User != nil {
			return nil, sortie.Invalidf("payload_bucket", "endpoint %.200q must be an http(s) URL without user info or a query", sortie.SafeURL(p.endpoint))
		}
		e.Path = strings.TrimSuffix(e.Path, "/")
		e.RawPath = ""
		if p.pathStyle || p.hostnameImmutable || !virtualHostable(bucket, e.Scheme == "http") {
			e.Path += "/" + bucket
		} else {
			e.Host = bucket + "." + e.Host
		}
		return e, nil
	}
	u := &url.URL{Scheme: "https", Host: "s3."}
	if p.http {
		u.Scheme = "http"
	}
	if p.dualStack {
		u.Host += "dualstack."
	}
	u.Host += p.region + ".amazonaws.com"
	if strings.HasPrefix(p.region, "cn-") {
		u.Host += ".cn"
	}
	if !p.pathStyle && virtualHostable(bucket, false) {
		u.Host = bucket + "." + u.Host
	} else {
		u.Path = "/" + bucket
	}
	return u, nil
}

// virtualHostable reports whether bucket can be the first labels of a
// host name, as the SDK's S3 endpoint rules decide
// (isVirtualHostableS3Bucket): not an IP address, each label 3 to 63
// letters, digits and hyphens, no upper case; dots (more labels) only
// when allowed (a custom endpoint over plain HTTP, where no certificate
// must match).
func virtualHostable(bucket string, dots bool) bool {
	if net.ParseIP(bucket) != nil {
		return false
	}
	labels := []string{bucket}
	if dots {
		labels = strings.Split(bucket, ".")
	}
	for _, l := range labels {
		if len(l) < 3 || strings.ToLower(l) != l || !smithyhttp.ValidHostLabel(l) {
			return false
		}
	}
	return true
}
