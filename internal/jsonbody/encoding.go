package jsonbody

import (
	"fmt"
	"net/http"
	"strings"
)

// CheckEncoding refuses a request body sent with a Content-Encoding other
// than identity (gzip, ...), which Sortie does not decode: it sets
// Accept-Encoding: identity on w (RFC 7694 §3) and returns an error
// naming the coding, which the caller answers 415 naming the header.
// It returns nil for no Content-Encoding or only identity.
func CheckEncoding(w http.ResponseWriter, h http.Header) error {
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				w.Header().Set("Accept-Encoding", "identity")
				return fmt.Errorf("Content-Encoding %.40q is not supported; send the body unencoded (identity)", c)
			}
		}
	}
	return nil
}
