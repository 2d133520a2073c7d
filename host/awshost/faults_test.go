package awshost_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// faultShare is a share of requests, 0..1000 per mille, that a fault
// proxy answers with a throttling error instead of passing on.
type faultShare struct{ permille atomic.Int64 }

func (f *faultShare) set(share float64) { f.permille.Store(int64(share * 1000)) }
func (f *faultShare) hit() bool         { return rand.Int64N(1000) < f.permille.Load() }

// The throttling errors DynamoDB answers (JSON 1.0 protocol: HTTP 400,
// the error type in __type): ProvisionedThroughputExceededException for
// provisioned tables, ThrottlingException for on-demand ones.
var dynamoThrottles = []string{
	`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`,
	`{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly."}`,
}

// dynamoProxy is a reverse proxy on loopback in front of DynamoDB Local
// that answers a share of calls with DynamoDB's throttling errors, and
// counts both, by operation (X-Amz-Target).
type dynamoProxy struct {
	URL    string
	faults faultShare
	mu     sync.Mutex
	passed map[string]int
	refuse map[string]int
}

func startDynamoProxy(t *testing.T, target string) *dynamoProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &dynamoProxy{passed: map[string]int{}, refuse: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		fault := p.faults.hit()
		p.mu.Lock()
		if fault {
			p.refuse[op]++
		} else {
			p.passed[op]++
		}
		p.mu.Unlock()
		if !fault {
			rp.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Requestid", "THROTTLEDBYTHETESTPROXY")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, dynamoThrottles[rand.IntN(len(dynamoThrottles))])
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *dynamoProxy) counts() (passed, refused map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	passed, refused = map[string]int{}, map[string]int{}
	for k, v := range p.passed {
		passed[k] = v
	}
	for k, v := range p.refuse {
		refused[k] = v
	}
	return passed, refused
}

// lambdaEndpoint is a Lambda Invoke endpoint on loopback: it accepts
// asynchronous invocations (202) and hands their payloads to deliver
// (which may drop them), except for a share it answers as Lambda does
// when the function's concurrency is exhausted: 429 with the error type
// TooManyRequestsException.
type lambdaEndpoint struct {
	URL     string
	faults  faultShare
	deliver func(payload []byte)
	invokes atomic.Int64
	refused atomic.Int64
}

func startLambdaEndpoint(t *testing.T, deliver func([]byte)) *lambdaEndpoint {
	e := &lambdaEndpoint{deliver: deliver}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if e.faults.hit() {
			e.refused.Add(1)
			w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}`)
			return
		}
		e.invokes.Add(1)
		e.deliver(body)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}
