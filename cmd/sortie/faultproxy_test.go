package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// faultProxy stands between hosts and DynamoDB Local: it fails a share
// of the DynamoDB writes, half before forwarding them (throttling, or an
// internal error: nothing applied) and half after (an internal error
// whose write was applied: the answer is lost), and adds up the capacity
// DynamoDB reported (ReturnConsumedCapacity) for every call, by kind.
type faultProxy struct {
	srv    *httptest.Server
	target string
	rate   float64

	mu          sync.Mutex
	read, write float64 // units DynamoDB reported
	lostConds   int     // writes refused by their condition (billed, not reported)
	faults      map[string]int
	calls       map[string]int
}

var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "TransactWriteItems": true, "BatchWriteItem": true}

func newFaultProxy(t *testing.T, target string, rate float64) *faultProxy {
	p := &faultProxy{target: target, rate: rate, faults: map[string]int{}, calls: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	fault := ""
	if writeOps[op] && rand.Float64() < p.rate {
		fault = []string{"throttled", "failed before", "failed after"}[rand.IntN(3)]
	}
	p.count(op, fault)
	switch fault {
	case "throttled":
		dynamoError(w, 400, "com.amazon.coral.availability#ThrottlingException", "injected: rate of requests exceeds the allowed throughput")
		return
	case "failed before":
		dynamoError(w, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "injected: internal server error")
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	p.account(op, resp.StatusCode, out)
	if fault != "" { // applied, and the answer lost
		dynamoError(w, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "injected: internal server error after the write")
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

func (p *faultProxy) count(op, fault string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[op]++
	if fault != "" {
		p.faults[fault]++
	}
}

// account adds the capacity of one answer: ConsumedCapacity is an object
// or a list; a write refused by its condition reports none, and is billed
// at least one write unit.
func (p *faultProxy) account(op string, status int, body []byte) {
	var one struct {
		ConsumedCapacity json.RawMessage
		Type             string `json:"__type"`
	}
	json.Unmarshal(body, &one)
	var units []struct{ CapacityUnits float64 }
	if len(one.ConsumedCapacity) > 0 && one.ConsumedCapacity[0] == '[' {
		json.Unmarshal(one.ConsumedCapacity, &units)
	} else if len(one.ConsumedCapacity) > 0 {
		var u struct{ CapacityUnits float64 }
		json.Unmarshal(one.ConsumedCapacity, &u)
		units = append(units, u)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range units {
		if writeOps[op] {
			p.write += u.CapacityUnits
		} else {
			p.read += u.CapacityUnits
		}
	}
	if status == 400 && (strings.HasSuffix(one.Type, "ConditionalCheckFailedException") || strings.HasSuffix(one.Type, "TransactionCanceledException")) {
		p.lostConds++
	}
}

// dynamoError writes an error answer as DynamoDB's JSON protocol does.
func dynamoError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// totals returns the units reported, the lost conditions and the faults.
func (p *faultProxy) totals() (read, write float64, lostConds int, faults, calls map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, c := map[string]int{}, map[string]int{}
	for k, v := range p.faults {
		f[k] = v
	}
	for k, v := range p.calls {
		c[k] = v
	}
	return p.read, p.write, p.lostConds, f, c
}
