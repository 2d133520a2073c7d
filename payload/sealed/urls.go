package sealed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/sortie-run/sortie"
)

// URLs are what a host grants one attempt: presigned URLs of the objects
// it may read and write, sealed into its invocation
// ([sortie.Invocation.SealedPayloadURLs]). Every URL is a bearer
// credential.
type URLs struct {
	// Store names the store, as references carry it ("s3://BUCKET").
	Store string `json:"store"`
	// MaxPayloadBytes is the store's per-payload maximum.
	MaxPayloadBytes int64 `json:"max_payload_bytes"`
	// Get maps object keys to URLs that read them (HTTP GET).
	Get map[string]string `json:"get,omitempty"`
	// Put maps object keys to URLs that write them (HTTP PUT).
	Put map[string]string `json:"put,omitempty"`
}

// maxURLsBytes bounds the decompressed JSON of an attempt's URLs.
const maxURLsBytes = 1 << 20

// EncodeURLs returns the plaintext of u that a host seals: its JSON,
// gzip-compressed. Every presigned URL repeats the signer's session token
// (about 1 KB with temporary credentials), so compressed, five URLs take
// little more room in an invocation than one.
func EncodeURLs(u *URLs) ([]byte, error) {
	plain, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeURLs decodes and checks opened URLs ([EncodeURLs], or their plain
// JSON): a store name, a positive limit, and absolute http(s) URLs of
// keys "runs/RUN/NAME". Errors never contain a URL.
func DecodeURLs(b []byte) (*URLs, error) {
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, err = io.ReadAll(io.LimitReader(zr, maxURLsBytes))
		}
		if err != nil {
			return nil, sortie.Invalidf("sealed_payload_urls", "not gzip-compressed payload URLs")
		}
		defer clear(b)
	}
	var u URLs
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, sortie.Invalidf("sealed_payload_urls", "not the JSON of payload URLs")
	}
	if u.Store == "" || u.MaxPayloadBytes <= 0 {
		return nil, sortie.Invalidf("sealed_payload_urls", "store and max_payload_bytes are required")
	}
	for _, m := range []map[string]string{u.Get, u.Put} {
		for key, raw := range m {
			p, err := url.Parse(raw)
			if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
				return nil, sortie.Invalidf("sealed_payload_urls", "the URL of %.80q is not an absolute http(s) URL", key)
			}
		}
	}
	return &u, nil
}

// URLStore is a [sortie.PayloadStore] over one attempt's [URLs]: Get
// reads an object through its GET URL and Put writes one through its PUT
// URL, each sealed and checked by the rule of [Seal] and [Open]; no other
// object is reachable. It needs no storage client or credentials, only
// net/http. DeleteRun and Sweep are the host's: they fail here. The
// per-run total is the host store's to check when it reads the run.
type URLStore struct {
	urls   *URLs
	sealer Sealer
	client *http.Client
}

var _ sortie.PayloadStore = (*URLStore)(nil)

// NewURLStore returns a URLStore over urls, sealing and opening with
// sealer (the worker's keyring: crypto/envelope's Config). client may be
// nil: a client that follows no redirect.
func NewURLStore(urls *URLs, sealer Sealer, client *http.Client) *URLStore {
	if client == nil {
		client = noRedirects()
	}
	return &URLStore{urls: urls, sealer: sealer, client: client}
}

// Name returns the store's name, as references carry it ("s3://BUCKET").
func (s *URLStore) Name() string { return s.urls.Store }

// Limits implements [sortie.PayloadStore].
func (s *URLStore) Limits() sortie.PayloadLimits {
	return sortie.PayloadLimits{MaxPayloadBytes: s.urls.MaxPayloadBytes}.WithDefaults()
}

// Put implements [sortie.PayloadStore]: only an object the host granted a
// PUT URL for.
func (s *URLStore) Put(ctx context.Context, run sortie.RunID, agent, name, field string, value []byte) (*sortie.PayloadRef, error) {
	if n := int64(len(value)); n > s.urls.MaxPayloadBytes {
		return nil, sortie.Invalidf(field, "%d bytes, over the payload store's per-payload limit of %d bytes", n, s.urls.MaxPayloadBytes)
	}
	key := Key(run, name)
	u, ok := s.urls.Put[key]
	if !ok {
		return nil, fmt.Errorf("payload store %q: this attempt was granted no URL to write %s", s.urls.Store, key)
	}
	object, ref, err := Seal(ctx, s.sealer, s.urls.Store, run, agent, key, field, value)
	if err != nil {
		return nil, err
	}
	resp, err := do(ctx, s.client, http.MethodPut, u, object)
	if err != nil {
		return nil, wrap(s.urls.Store, "store", key, err)
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return nil, status(s.urls.Store, "store", key, resp)
	}
	return ref, nil
}

// Get implements [sortie.PayloadStore]: only an object the host granted a
// GET URL for.
func (s *URLStore) Get(ctx context.Context, run sortie.RunID, agent string, ref *sortie.PayloadRef) ([]byte, error) {
	if err := CheckRef(s.urls.Store, run, ref); err != nil {
		return nil, err
	}
	u, ok := s.urls.Get[ref.Key]
	if !ok {
		return nil, fmt.Errorf("payload store %q: this attempt was granted no URL to read %s", s.urls.Store, ref.Key)
	}
	resp, err := do(ctx, s.client, http.MethodGet, u, nil)
	if err != nil {
		return nil, wrap(s.urls.Store, "read", ref.Key, err)
	}
	defer drain(resp)
	if resp.StatusCode == http.StatusNotFound {
		return nil, Missing(run, ref)
	} else if resp.StatusCode != http.StatusOK {
		return nil, status(s.urls.Store, "read", ref.Key, resp)
	}
	limit := ref.Size + SlackBytes
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("payload %s: the stored object is %d bytes, more than its reference allows (%d): %w", ref.Key, resp.ContentLength, limit, sortie.ErrPayloadIntegrity)
	}
	object, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, wrap(s.urls.Store, "read", ref.Key, err)
	}
	return Open(ctx, s.sealer, run, agent, ref, object)
}

// DeleteRun implements [sortie.PayloadStore]: a worker deletes nothing.
func (s *URLStore) DeleteRun(context.Context, sortie.RunID) error {
	return errors.New("payload store: an attempt's URL store deletes nothing; the host deletes a run's objects")
}

// Sweep implements [sortie.PayloadStore]: a worker sweeps nothing.
func (s *URLStore) Sweep(context.Context, func(context.Context, sortie.RunID) (bool, error), time.Time) (int, error) {
	return 0, errors.New("payload store: an attempt's URL store sweeps nothing; the host sweeps its store")
}

// do sends method to the presigned URL u with body (none when nil); an
// error never holds u.
func do(ctx context.Context, client *http.Client, method, u string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("bad URL")
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.ContentLength = int64(len(body))
	}
	return client.Do(req)
}

// noRedirects is the HTTP client of presigned URLs: it follows no
// redirect.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// wrap is a failed request's error in store without its URL (a
// *url.Error names it): context errors unchanged, anything else
// ErrUnavailable.
func wrap(store, op, key string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("payload store %q: %s %s: %w", store, op, key, err)
	}
	return fmt.Errorf("payload store %q: %s %s: %v: %w", store, op, key, err, sortie.ErrUnavailable)
}

// status maps an answer of store other than success (Get maps a 404 to
// [Missing] first): 404 to ErrNotFound, 403 (an expired or refused URL)
// permanent, 429 and 5xx to ErrUnavailable.
func status(store, op, key string, resp *http.Response) error {
	var sentinel error
	switch {
	case resp.StatusCode == http.StatusNotFound:
		sentinel = sortie.ErrNotFound
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		sentinel = sortie.ErrUnavailable
	default:
		return fmt.Errorf("payload store %q: %s %s: HTTP %d (the URL was refused: expired, or not granted)", store, op, key, resp.StatusCode)
	}
	return fmt.Errorf("payload store %q: %s %s: HTTP %d: %w", store, op, key, resp.StatusCode, sentinel)
}

// URLOpener opens an invocation's sealed payload URLs: the worker's
// keyring (crypto/envelope's Config).
type URLOpener interface {
	// OpenPayloadURLs returns the plaintext of inv.SealedPayloadURLs,
	// bound to inv's run and attempt, and the key-management requests it
	// made. Errors wrap sortie.ErrUnavailable when a retry may cure them
	// and never contain a URL.
	OpenPayloadURLs(ctx context.Context, inv *sortie.Invocation) (urls []byte, kmsRequests int, err error)
}

// OpenURLs opens inv's sealed payload URLs with o and decodes them
// ([DecodeURLs]), as a worker does, clearing the plaintext after; it
// returns how many KMS requests o made. Errors are o's or DecodeURLs'.
func OpenURLs(ctx context.Context, o URLOpener, inv *sortie.Invocation) (*URLs, int, error) {
	plain, n, err := o.OpenPayloadURLs(ctx, inv)
	defer clear(plain)
	if err != nil {
		return nil, n, err
	}
	urls, err := DecodeURLs(plain)
	return urls, n, err
}
