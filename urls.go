package sortie

import (
	"errors"
	"net/url"
	"strings"
)

// SafeURL returns raw as scheme://host/path, without the user info, query
// and fragment that may carry credentials (passwords, presigned
// signatures, receivers' tokens), for quoting in errors and logs; an
// opaque URL ("name:secret@host", which parses as scheme "name") keeps
// only its scheme. An unparsable raw gives "(unparsable URL)".
func SafeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	u.Opaque = "" // "name:secret@host" parses as scheme "name", the rest opaque
	return u.String()
}

// RedactURLError returns err with the URL of the [*url.Error] in its chain
// (as net/http and url.Parse return) cut to [SafeURL], so printing it
// shows no user info or query; err unchanged when it holds none.
func RedactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = SafeURL(ue.URL)
	}
	return err
}

// CheckBaseURL is [CheckHTTPURL] for a URL that requests are made
// under (a host's API, its worker callbacks): it also refuses a query or
// fragment, which the paths appended to it would break. Its
// [*ValidationError] names field and never quotes the query.
func CheckBaseURL(field, raw string) error {
	if err := CheckHTTPURL(field, raw); err != nil {
		return err
	}
	if u, _ := url.Parse(raw); u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return invalidf(field, "must have no query (?...) or fragment (#...): requests add their own path and query to it")
	}
	return nil
}

// CheckHTTPURL checks that raw is an absolute http or https URL with a
// host and without user info. Its [*ValidationError] names field and what
// is wrong, quoting at most scheme://host/path (see [SafeURL]), never the
// user info or query.
func CheckHTTPURL(field, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return invalidf(field, "is required: an absolute http(s) URL")
	case err != nil:
		return invalidf(field, "is not a URL (want an absolute http(s) URL)")
	case u.User != nil:
		return invalidf(field, "must not carry user info (NAME:PASSWORD@ before the host); pass credentials another way")
	case u.Scheme == "":
		return invalidf(field, "%.200q is not absolute: want an http(s) URL with a host", SafeURL(raw))
	case u.Scheme != "https" && u.Scheme != "http":
		return invalidf(field, "scheme %.20q of %.200q must be http or https", strings.ToLower(u.Scheme), SafeURL(raw))
	case u.Host == "":
		return invalidf(field, "%.200q has no host (want an absolute http(s) URL)", SafeURL(raw))
	}
	return nil
}
