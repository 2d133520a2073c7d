package awsfed

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Call is one AssumeRoleWithWebIdentity request the STS endpoint took.
type Call struct {
	RoleARN, SessionName, Token string
	// Issued is the session token of the credentials it issued, "" when
	// it refused; Expires is when they expire.
	Issued  string
	Expires time.Time
}

// STSOptions configures [StartSTS].
type STSOptions struct {
	// Check accepts or refuses a web identity token (the role's trust
	// policy). Required.
	Check func(token string) error
	// AccessKeyID is the access key ID of the credentials issued.
	// Optional; defaults to "ASIAFEDERATEDTEST".
	AccessKeyID string
	// Lifetime is how long issued credentials last. Optional; defaults to
	// one hour.
	Lifetime time.Duration
}

// STS is a running STS endpoint.
type STS struct {
	// Endpoint is its base URL (AWS_ENDPOINT_URL_STS).
	Endpoint string

	opts  STSOptions
	mu    sync.Mutex
	calls []Call
}

// StartSTS serves AssumeRoleWithWebIdentity on loopback until tb ends.
func StartSTS(tb testing.TB, opts STSOptions) *STS {
	if opts.AccessKeyID == "" {
		opts.AccessKeyID = "ASIAFEDERATEDTEST"
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = time.Hour
	}
	s := &STS{opts: opts}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(srv.Close)
	s.Endpoint = srv.URL
	return s
}

// Calls returns the requests taken so far, in order.
func (s *STS) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumeResponse struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ AssumeRoleWithWebIdentityResponse"`
	Result  struct {
		SubjectFromWebIdentityToken string         `xml:"SubjectFromWebIdentityToken"`
		Credentials                 stsCredentials `xml:"Credentials"`
		AssumedRoleUser             struct {
			Arn           string `xml:"Arn"`
			AssumedRoleID string `xml:"AssumedRoleId"`
		} `xml:"AssumedRoleUser"`
		Provider string `xml:"Provider"`
	} `xml:"AssumeRoleWithWebIdentityResult"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

type errorResponse struct {
	XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ ErrorResponse"`
	Type    string   `xml:"Error>Type"`
	Code    string   `xml:"Error>Code"`
	Message string   `xml:"Error>Message"`
	ID      string   `xml:"RequestId"`
}

func (s *STS) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("Action") != "AssumeRoleWithWebIdentity" ||
		r.PostForm.Get("Version") != "2011-06-15" {
		writeXML(w, http.StatusBadRequest, &errorResponse{Type: "Sender", Code: "InvalidAction", Message: "Could not find operation", ID: "req"})
		return
	}
	c := Call{RoleARN: r.PostForm.Get("RoleArn"), SessionName: r.PostForm.Get("RoleSessionName"), Token: r.PostForm.Get("WebIdentityToken")}
	if err := s.opts.Check(c.Token); err != nil {
		s.record(&c)
		writeXML(w, http.StatusForbidden, &errorResponse{Type: "Sender", Code: "AccessDenied",
			Message: "Not authorized to perform sts:AssumeRoleWithWebIdentity: " + err.Error(), ID: "req"})
		return
	}
	c.Issued, c.Expires = "issued", time.Now().Add(s.opts.Lifetime).UTC().Truncate(time.Second)
	n := s.record(&c)
	var resp assumeResponse
	resp.Result.SubjectFromWebIdentityToken = "100000000000000000001"
	resp.Result.Provider = "accounts.google.com"
	resp.Result.AssumedRoleUser.Arn = "arn:aws:sts::111122223333:assumed-role/sortie/" + c.SessionName
	resp.Result.AssumedRoleUser.AssumedRoleID = "AROAFEDERATEDTEST:" + c.SessionName
	resp.Result.Credentials = stsCredentials{AccessKeyID: s.opts.AccessKeyID, SecretAccessKey: "federated-secret",
		SessionToken: c.Issued, Expiration: c.Expires.Format(time.RFC3339)}
	resp.RequestID = fmt.Sprintf("req-%d", n)
	writeXML(w, http.StatusOK, &resp)
}

// record keeps c, numbering the session token of an issuing call, and
// returns its number.
func (s *STS) record(c *Call) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.calls) + 1
	if c.Issued != "" {
		c.Issued = fmt.Sprintf("session-token-%d", n)
	}
	s.calls = append(s.calls, *c)
	return n
}

func writeXML(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(code)
	_ = xml.NewEncoder(w).Encode(v)
}
