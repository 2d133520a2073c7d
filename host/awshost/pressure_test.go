package awshost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/internal/testwait"
	"github.com/sortie-run/sortie/server"
	"github.com/sortie-run/sortie/testrig/dynamodblocal"
	"github.com/sortie-run/sortie/wire"
)

// load is the shape of a pressure run: submissions per second over HTTP,
// the window DynamoDB and Lambda throttle a share of calls, the running
// attempts heartbeating meanwhile.
type load struct {
	// rate is submissions per second; 0 for a closed loop of conc
	// submitters, each sending its next once answered: the suite's, which
	// a loaded machine slows without overloading.
	rate     int
	conc     int
	window   time.Duration
	attempts int
	share    float64
	// after is the rate once the faults end: what the machine carries
	// without them, so the recovery seen is throttling's, not an
	// overload's queue draining.
	after int
}

// pressureLoad is the suite's bounded run, its fault window longer than
// the hold runs' lease (so heartbeats failing throughout would lose it); SORTIE_PRESSURE_FULL=1 gives
// the issue's: 200 submissions/s and 50 attempts for 10 s, 30% throttled;
// SORTIE_PRESSURE="RATE WINDOW ATTEMPTS SHARE AFTER" ("100 5s 20 0.3 50")
// any other. The API sheds submissions beyond 64 in flight (about a
// second of DynamoDB Local's work on a loaded 2-core machine).
func pressureLoad() load {
	if v := os.Getenv("SORTIE_PRESSURE"); v != "" {
		var l load
		var w string
		if _, err := fmt.Sscan(v, &l.rate, &w, &l.attempts, &l.share, &l.after); err == nil {
			if l.window, err = time.ParseDuration(w); err == nil {
				return l
			}
		}
	}
	if os.Getenv("SORTIE_PRESSURE_FULL") != "" {
		return load{rate: 200, window: 10 * time.Second, attempts: 50, share: 0.3, after: 50}
	}
	return load{conc: 4, window: 9 * time.Second, attempts: 10, share: 0.3}
}

// leaseMs is the hold runs' lease, in ms: 8 s, so a worker fences itself
// (lease − lease/3) only after 5.3 s without a heartbeat; with 5 s, a
// loaded 2-core machine running the whole suite saw 3.3 s gaps reach the
// fence and lose leases the design keeps.
const leaseMs = 8000

// The agents of the pressure test: hold runs until released, heartbeating
// every second on an 8 s lease; load runs are never claimed (their
// invocations are dropped) and never relaunched meanwhile.
var pressureAgents = sortie.Agents{
	"hold": {Name: "hold", Version: "1", Runtime: "go:hold", Policy: sortie.Policy{HeartbeatMs: 1000, LeaseMs: leaseMs, StartTimeoutMs: 60000, BackoffMs: 100}},
	"load": {Name: "load", Version: "1", Runtime: "go:load", Policy: sortie.Policy{StartTimeoutMs: 600000}},
}

// pressureRig is a host (engine, API, reconciler) and a worker host on one
// DynamoDB Local table behind a throttling proxy, launching on a Lambda
// endpoint that throttles too.
type pressureRig struct {
	proxy  *dynamoProxy
	lambda *lambdaEndpoint
	engine *sortie.Engine
	api    *httptest.Server
	worker sortie.ControlPlane
	invs   chan []byte
}

func startPressureRig(t *testing.T, attempts int) *pressureRig {
	ddb, err := dynamodblocal.Start(t.Context())
	if err != nil {
		t.Fatalf("start DynamoDB Local: %v", err)
	}
	t.Cleanup(ddb.Stop)
	const table = "sortie-pressure"
	if err := dynamo.CreateTable(t.Context(), dynamodb.NewFromConfig(ddb.Config()), table); err != nil {
		t.Fatalf("CreateTable = %v", err)
	}
	r := &pressureRig{proxy: startDynamoProxy(t, ddb.Endpoint), invs: make(chan []byte, attempts)}
	r.lambda = startLambdaEndpoint(t, func(b []byte) {
		if strings.Contains(string(b), `"name":"hold"`) {
			r.invs <- b
		}
	})
	awsCfg := aws.Config{Region: dynamodblocal.Region, Credentials: credentials.NewStaticCredentialsProvider(
		dynamodblocal.AccessKeyID, dynamodblocal.SecretAccessKey, "")}
	host, err := awshost.OpenWith(t.Context(), awsCfg, awshost.Config{Table: table, DynamoEndpoint: r.proxy.URL, Function: "function", LambdaEndpoint: r.lambda.URL})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	if r.engine, err = host.Engine(pressureAgents, sortie.EngineOptions{Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Engine: r.engine, Logger: quiet, MaxSubmits: 64})
	if err != nil {
		t.Fatal(err)
	}
	r.api = httptest.NewServer(srv)
	worker, err := awshost.OpenWith(t.Context(), awsCfg, awshost.Config{Table: table, DynamoEndpoint: r.proxy.URL})
	if err != nil {
		t.Fatal(err)
	}
	r.worker = worker.ControlPlane
	t.Cleanup(func() { r.api.Close(); r.engine.Close(); host.Close(); worker.Close() })
	return r
}

// beats is a worker's reporter that keeps the longest time between its
// attempt's claim or successful heartbeats, counting the time up to a
// failed heartbeat too (a lease lost for good ends in failures).
type beats struct {
	functions.Reporter
	mu     sync.Mutex
	last   time.Time
	maxGap time.Duration
}

func (b *beats) mark(ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !b.last.IsZero() {
		b.maxGap = max(b.maxGap, now.Sub(b.last))
	}
	if ok {
		b.last = now
	}
}

func (b *beats) Claim(ctx context.Context) error {
	err := b.Reporter.Claim(ctx)
	if err == nil {
		b.mark(true)
	}
	return err
}

func (b *beats) Heartbeat(ctx context.Context) (bool, error) {
	cancel, err := b.Reporter.Heartbeat(ctx)
	b.mark(err == nil)
	return cancel, err
}

// holding starts n hold runs and their workers on the worker host, and
// waits until every handler runs. Closing release ends them.
func (r *pressureRig) holding(t *testing.T, n int, release <-chan struct{}) (map[sortie.RunID]*beats, *sync.WaitGroup) {
	reg := functions.NewRegistry()
	var running atomic.Int64
	reg.Register("hold", func(ctx context.Context, c *functions.Call) (any, error) {
		running.Add(1)
		select {
		case <-release:
			return "held", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	w := &functions.Worker{Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	for range n {
		if _, err := r.engine.Submit(t.Context(), &sortie.SubmitRequest{Agent: "hold"}); err != nil {
			t.Fatalf("Submit(hold) = %v", err)
		}
	}
	reps := map[sortie.RunID]*beats{}
	var wg sync.WaitGroup
	for range n {
		inv, err := sortie.DecodeInvocation(<-r.invs)
		if err != nil {
			t.Fatal(err)
		}
		rep := &beats{Reporter: functions.NewControlPlaneReporter(r.worker, inv, "pressure-worker")}
		reps[inv.RunID] = rep
		wg.Go(func() { _, _ = w.Execute(context.Background(), inv, rep) })
	}
	testwait.Until(t, fmt.Sprintf("%d hold handlers running", n), 30*time.Second, func() bool { return running.Load() == int64(n) })
	return reps, &wg
}

// answer is one submission's HTTP status (0 for a transport error) and
// when it was sent.
type answer struct {
	sent   time.Time
	status int
}

// submitter sends keyed submissions of the load agent at a steady rate
// until stop is closed, keeping every answer.
type submitter struct {
	mu      sync.Mutex
	answers []answer
	sent    atomic.Int64
	rate    atomic.Int64 // submissions per second
	wg      sync.WaitGroup
}

var pressureClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// run paces submissions at s.rate until stop is closed.
func (s *submitter) run(url string, stop <-chan struct{}) {
	next := time.Now()
	for {
		next = next.Add(time.Second / time.Duration(s.rate.Load()))
		select {
		case <-stop:
			return
		case <-time.After(time.Until(next)): // the load's pace
		}
		s.sent.Add(1)
		s.wg.Go(func() { s.submit(url) })
	}
}

// loop runs conc submitters, each sending its next submission once the
// last is answered, until stop is closed.
func (s *submitter) loop(url string, conc int, stop <-chan struct{}) {
	for range conc {
		s.wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.sent.Add(1)
				s.submit(url)
			}
		})
	}
}

// submit sends one keyed submission and keeps its answer.
func (s *submitter) submit(url string) {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/runs", strings.NewReader(`{"agent":"load"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.IdempotencyKeyHeader, fmt.Sprintf("pressure-%d-%d", time.Now().UnixNano(), s.sent.Load()))
	a := answer{sent: time.Now()}
	if resp, err := pressureClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		a.status = resp.StatusCode
	}
	s.mu.Lock()
	s.answers = append(s.answers, a)
	s.mu.Unlock()
}

// answered returns how many submissions were answered.
func (s *submitter) answered() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.answers))
}

// statuses counts the answers by status, and returns the send time of
// the last one that was not 2xx.
func (s *submitter) statuses() (map[int]int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	var lastBad time.Time
	for _, a := range s.answers {
		out[a.status]++
		if a.status/100 != 2 && a.sent.After(lastBad) {
			lastBad = a.sent
		}
	}
	return out, lastBad
}

func statusList(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// runJSON decodes a stored run for the log.
func runJSON(r *sortie.Run) string {
	b, _ := json.Marshal(struct {
		State   sortie.State `json:"state"`
		Attempt int          `json:"attempt"`
	}{r.State, r.Attempt})
	return string(b)
}

// recoveryBound is how soon after throttling ends every submission is
// accepted again.
const recoveryBound = 5 * time.Second

// Under throttling, submissions are answered and leases kept: with
// DynamoDB answering a share of calls ProvisionedThroughputExceeded or
// ThrottlingException and Lambda answering 429, keyed submissions at a
// steady rate over HTTP get 201, 200 or 429 (never a 500), the running
// attempts' heartbeats (their own DynamoDB client and retry budget) keep
// every lease while a reconciler watches for expired ones, and every
// submission sent 5 s or more after the faults end is accepted. (The
// recovery is judged by when the last refused submission was sent, once
// all are answered, so a slow machine's queue does not count as
// throttling.)
func TestThrottlingKeepsLeasesAndAnswers(t *testing.T) {
	l := pressureLoad()
	r := startPressureRig(t, l.attempts)
	release := make(chan struct{})
	reps, workers := r.holding(t, l.attempts, release)
	ctx, stopReconciler := context.WithCancel(context.Background())
	var reconciled sync.WaitGroup
	reconciled.Go(func() { r.engine.RunReconciler(ctx, 250*time.Millisecond) })
	var sub submitter
	sub.rate.Store(int64(l.rate))
	stop := make(chan struct{})
	if l.rate > 0 {
		go sub.run(r.api.URL, stop)
	} else {
		sub.loop(r.api.URL, l.conc, stop)
	}
	r.proxy.faults.set(l.share)
	r.lambda.faults.set(l.share)
	began := time.Now()
	time.Sleep(l.window) // the fault window's length: the load runs meanwhile
	r.proxy.faults.set(0)
	r.lambda.faults.set(0)
	faultsOff := time.Now()
	if l.after > 0 {
		sub.rate.Store(int64(l.after))
	}
	time.Sleep(recoveryBound + time.Second) // the load goes on past the bound
	close(stop)
	testwait.UntilReport(t, "every submission answered", 120*time.Second, func() (bool, string) {
		return sub.answered() == sub.sent.Load(), fmt.Sprintf("%d of %d answered", sub.answered(), sub.sent.Load())
	})
	sub.wg.Wait()
	stopReconciler()
	reconciled.Wait()

	statuses, lastBad := sub.statuses()
	recovery := time.Duration(0)
	if lastBad.After(faultsOff) {
		recovery = lastBad.Sub(faultsOff)
	}
	var maxGap time.Duration
	for _, b := range reps {
		b.mu.Lock()
		maxGap = max(maxGap, b.maxGap)
		b.mu.Unlock()
	}
	passed, refused := r.proxy.counts()
	t.Logf("load: %d submissions/s asked (%d/s after the faults; 0: %d submitters in a closed loop), %d sent in %v (%v with faults); statuses %v; recovery %v after the faults ended; longest heartbeat gap %v (lease %d ms) over %d attempts; DynamoDB calls passed %v, throttled %v; Lambda invokes %d, throttled %d",
		l.rate, l.after, l.conc, len(sub.answers), time.Since(began).Round(time.Millisecond), l.window, statuses, recovery.Round(time.Millisecond), maxGap.Round(time.Millisecond), leaseMs,
		l.attempts, passed, refused, r.lambda.invokes.Load(), r.lambda.refused.Load())
	for _, s := range statusList(statuses) {
		if s != http.StatusCreated && s != http.StatusOK && s != http.StatusTooManyRequests {
			t.Errorf("%d submissions answered %d, want only 201, 200 or 429", statuses[s], s)
		}
	}
	if total := refused["DynamoDB_20120810.UpdateItem"] + refused["DynamoDB_20120810.PutItem"]; total == 0 {
		t.Errorf("throttled DynamoDB writes %d: the faults never hit", total)
	}
	if maxGap >= leaseMs*time.Millisecond {
		t.Errorf("longest time between an attempt's successful heartbeats = %v, want under its lease (%d ms)", maxGap, leaseMs)
	}
	if recovery > recoveryBound {
		t.Errorf("a submission sent %v after the faults ended was refused, want every one sent %v after accepted", recovery, recoveryBound)
	}
	close(release)
	workers.Wait()
	for id := range reps {
		run, err := r.worker.Get(context.Background(), id)
		if err != nil || run.State != sortie.StateCompleted || run.Attempt != 1 {
			t.Errorf("hold run %s = %s (%v), want completed by its first attempt (no lease lost)", id, runJSON(run), err)
		}
	}
}
