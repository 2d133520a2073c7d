package host_test

import (
	"errors"
	"net"
	"path/filepath"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/destination"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/host/awshost"
	"github.com/sortie-run/sortie/host/builtin"
	"github.com/sortie-run/sortie/host/gcphost"
)

// Validate refuses what cannot work, naming the field, before anything is
// opened.
func TestValidateNamesTheField(t *testing.T) {
	dir := t.TempDir()
	const job = "projects/p/locations/r/jobs/j"
	exec := sortie.Agents{"py": {Name: "py", Version: "1", Runtime: "exec:py"}}
	for _, tc := range []struct {
		name  string
		cfg   host.Config
		field string
	}{
		{"no state dir", host.Config{}, "StateDir"},
		{"negative interval", host.Config{StateDir: dir, ReconcileInterval: -1}, "ReconcileInterval"},
		{"in-process on AWS", host.Config{StateDir: dir, InProcess: true, AWS: awshost.Config{Table: "runs"}}, "InProcess"},
		{"in-process and per attempt", host.Config{StateDir: dir, InProcess: true, ProcessPerAttempt: true}, "ProcessPerAttempt"},
		{"negative pool size", host.Config{StateDir: dir, WorkerPoolSize: -1}, "WorkerPoolSize"},
		{"pool size over the limit", host.Config{StateDir: dir, WorkerPoolSize: functions.MaxPoolSize + 1}, "WorkerPoolSize"},
		{"negative recycle", host.Config{StateDir: dir, WorkerRecycleAfter: -1}, "WorkerRecycleAfter"},
		{"local workers and Lambda", host.Config{StateDir: dir, LocalWorkers: true, AWS: awshost.Config{Table: "runs", Function: "f"}}, "LocalWorkers"},
		{"a worker process per attempt on AWS without callbacks", host.Config{StateDir: dir, LocalWorkers: true, ProcessPerAttempt: true,
			AWS: awshost.Config{Table: "runs"}, API: &host.API{PublicURL: "http://127.0.0.1:7780"}}, "LocalWorkers"},
		{"bad variable name", host.Config{StateDir: dir, ConfigEnv: []string{"API-TOKEN"}}, "ConfigEnv"},
		{"bad log level", host.Config{StateDir: dir, WorkerLogLevel: "loud"}, "WorkerLogLevel"},
		{"bad policy", host.Config{StateDir: dir, Destinations: &destination.Policy{Allow: []string{"http://x"}}}, "Destinations"},
		{"missing runtimes file", host.Config{StateDir: dir, Runtimes: filepath.Join(dir, "none.json")}, "Runtimes"},
		{"exec agent without runtimes", host.Config{StateDir: dir, Agents: exec}, "Runtimes"},
		{"bad input schema", host.Config{StateDir: dir, Agents: sortie.Agents{"typed": {Name: "typed", Runtime: "go:probe",
			InputSchema: []byte(`{"properties":{"n":{"type":"integr"}}}`)}}}, "agent.input_schema"},
		{"Go agent the local workers lack", host.Config{StateDir: dir, Registry: builtin.Registry(),
			Agents: sortie.Agents{"bad": {Name: "bad", Version: "1", Runtime: "go:nope"}}}, "agent.runtime"},
		{"exec agent the allowlist lacks", host.Config{StateDir: dir, Agents: exec, Runtimes: "../examples/runtimes.json"}, "Runtimes"},
		{"short token", host.Config{StateDir: dir, API: &host.API{Tokens: []string{"short"}}}, "API.Tokens"},
		{"callbacks without a URL", host.Config{StateDir: dir, API: &host.API{WorkerCallbacks: true}}, "API.CallbackURL"},
		{"missing config refs file", host.Config{StateDir: dir, ConfigRefs: filepath.Join(dir, "none.json")}, "ConfigRefs"},
		{"trigger rules naming an unknown reference", host.Config{StateDir: dir, API: &host.API{TriggerRules: refRules(t)}}, "API.TriggerRules"},
		{"callbacks over plain HTTP off loopback", host.Config{StateDir: dir,
			API: &host.API{WorkerCallbacks: true, PublicURL: "http://sortie.internal:7780"}}, "API.CallbackURL"},
		{"callbacks to a URL that is no http(s)", host.Config{StateDir: dir,
			API: &host.API{WorkerCallbacks: true, CallbackURL: "ftp://sortie.internal"}}, "API.CallbackURL"},
		{"callbacks to loopback from Lambda", host.Config{StateDir: dir, AWS: awshost.Config{Table: "runs", Function: "f"},
			API: &host.API{WorkerCallbacks: true, PublicURL: "http://LOCALHOST:7780"}}, "API.CallbackURL"},
		{"callbacks to loopback from Cloud Run", host.Config{StateDir: dir, GCP: gcphost.Config{Job: job},
			API: &host.API{WorkerCallbacks: true, PublicURL: "http://127.0.0.1:7780"}}, "API.CallbackURL"},
		{"Cloud Run and Lambda", host.Config{StateDir: dir, GCP: gcphost.Config{Job: job}, AWS: awshost.Config{Table: "runs", Function: "f"}}, "GCP.Job"},
		{"a Job and a service", host.Config{StateDir: dir, GCP: gcphost.Config{Job: job, Service: "https://w.run.app"}}, "GCP.Service"},
		{"a service that is no URL", host.Config{StateDir: dir, GCP: gcphost.Config{Service: "w.run.app"}}, "GCP.Service"},
		{"in-process on Cloud Run", host.Config{StateDir: dir, InProcess: true, GCP: gcphost.Config{Job: job}}, "InProcess"},
		{"negative payload limit", host.Config{StateDir: dir, PayloadLimits: sortie.PayloadLimits{MaxPayloadBytes: -5}}, "PayloadLimits.MaxPayloadBytes"},
		{"per-run limit under the per-payload one", host.Config{StateDir: dir,
			PayloadLimits: sortie.PayloadLimits{MaxPayloadBytes: 100, MaxRunBytes: 10}}, "PayloadLimits.MaxRunBytes"},
		{"two keyrings", host.Config{StateDir: dir, GCP: gcphost.Config{KMSKeys: [][2]string{{"g", "projects/p/locations/l/keyRings/r/cryptoKeys/k"}}},
			AWS: awshost.Config{Table: "runs", KMSKeys: [][2]string{{"a", "arn:aws:kms:r:1:key/k"}}}}, "GCP.KMSKeys"},
	} {
		err := tc.cfg.Validate()
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("%s: Validate() = %v, want a *sortie.ValidationError naming %s", tc.name, err, tc.field)
		}
	}
	ok := host.Config{StateDir: dir, ConfigEnv: []string{"API_TOKEN"}, Runtimes: "../examples/runtimes.json",
		Agents: sortie.Agents{"wordfreq-py": {Name: "wordfreq-py", Version: "1", Runtime: "exec:wordfreq-py"}},
		API:    &host.API{WorkerCallbacks: true, PublicURL: "http://127.0.0.1:7780"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v, want nil", ok, err)
	}
	lambda := host.Config{StateDir: dir, Registry: builtin.Registry(), AWS: awshost.Config{Table: "runs", Function: "f"},
		Agents: sortie.Agents{"remote": {Name: "remote", Version: "1", Runtime: "go:only-on-lambda"}}}
	if err := lambda.Validate(); err != nil {
		t.Errorf("Validate(a Go agent for the Lambda workers' registry) = %v, want nil: the host cannot see it", err)
	}
	for _, api := range []*host.API{
		{WorkerCallbacks: true, PublicURL: "https://sortie.internal"},
		{WorkerCallbacks: true, PublicURL: "http://sortie.internal:7780", InsecureHTTPCallbacks: true},
	} {
		if err := (&host.Config{StateDir: dir, API: api}).Validate(); err != nil {
			t.Errorf("Validate(API %+v) = %v, want nil", api, err)
		}
	}
}

// An API without tokens listens on loopback only (any loopback form),
// unless it has tokens or serves any client.
func TestCheckListen(t *testing.T) {
	open := &host.API{}
	for addr, want := range map[string]bool{
		"127.0.0.1:7780": true, "127.0.0.2:7780": true, "[::1]:7780": true, "LOCALHOST:7780": true,
		"[::ffff:127.0.0.1]:7780": true, "0.0.0.0:7780": false, ":7780": false, "10.0.0.1:7780": false,
		"[::ffff:10.0.0.1]:7780": false, "example.com:7780": false,
	} {
		if got := open.CheckListen(addr) == nil; got != want {
			t.Errorf("API{}.CheckListen(%s) = %v, want allowed %v", addr, open.CheckListen(addr), want)
		}
	}
	for _, api := range []*host.API{{Tokens: []string{testToken}}, {AnyClient: true}} {
		if err := api.CheckListen("0.0.0.0:7780"); err != nil {
			t.Errorf("%+v.CheckListen(0.0.0.0:7780) = %v, want nil", api, err)
		}
	}
}

// addrListener reports another address than the one it listens on.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l addrListener) Addr() net.Addr { return l.addr }

// Serve refuses a listener that is not loopback for an API without tokens.
func TestServeRefusesAnOpenAPIOffLoopback(t *testing.T) {
	h := newHost(t, host.Config{StateDir: t.TempDir(), InProcess: true, API: &host.API{}})
	ln := listen(t)
	defer ln.Close()
	off := addrListener{ln, &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 7780}}
	err := h.Serve(t.Context(), off)
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "API.Tokens" {
		t.Errorf("Serve(a listener on 10.0.0.1 without tokens) = %v, want a *sortie.ValidationError naming API.Tokens", err)
	}
}

// refRules are trigger rules whose one rule names configuration
// reference "db".
func refRules(t *testing.T) *triggers.Rules {
	t.Helper()
	r, err := triggers.ParseRules([]byte(`{"version":"sortie.triggers/v1","rules":[
		{"name":"a","match":{"kind":"s3"},"agent":"probe","config_refs":["db"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
