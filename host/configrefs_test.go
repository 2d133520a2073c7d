package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
	"github.com/sortie-run/sortie/functions/gcpsecrets"
	fnprobe "github.com/sortie-run/sortie/functions/probe"
	"github.com/sortie-run/sortie/host"
	"github.com/sortie-run/sortie/internal/logbuf"
	"github.com/sortie-run/sortie/testrig/secretstores"
)

// The canaries: one value per source, never to be stored, logged or shown.
var refCanaries = map[string]string{
	"OPENAI_API_KEY": "canary-env-5d1e",
	"DATABASE_URL":   "canary-file-2a7c",
	"STRIPE_KEY":     "canary-aws-9f30",
	"GITHUB_TOKEN":   "canary-gcp-64b8",
}

const (
	stripeARN    = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"
	githubSecret = "projects/test/secrets/github"
)

// refsHost is a served in-process host whose allowlist names a reference
// of each source, the secret stores on loopback, and its log.
type refsHost struct {
	*served
	aws  *secretstores.AWS
	gcp  *secretstores.GCP
	logs *logbuf.Buffer
}

// refCheck reports, for each canary variable, whether Call.Config holds
// its value: booleans only, never a value. Attempt 1 fails (retryably)
// after checking, so a run has two attempts.
func refCheck(ctx context.Context, c *functions.Call) (any, error) {
	cfg := c.Config()
	seen := map[string]bool{}
	for k, v := range refCanaries {
		seen[k] = cfg[k] == v
	}
	if err := c.Emit("progress", fmt.Sprintf("attempt %d saw %d variables", c.Attempt(), len(cfg)), nil); err != nil {
		return nil, err
	}
	if c.Attempt() == 1 {
		return nil, errors.New("attempt 1 fails on purpose")
	}
	return seen, nil
}

func newRefsHost(t *testing.T) *refsHost {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOST_OPENAI_KEY", refCanaries["OPENAI_API_KEY"])
	if err := os.WriteFile(filepath.Join(dir, "db-url"), []byte(refCanaries["DATABASE_URL"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	allow := fmt.Sprintf(`{"version": "sortie.configrefs/v1", "refs": {
		"openai": {"var": "OPENAI_API_KEY", "env": "HOST_OPENAI_KEY"},
		"db":     {"var": "DATABASE_URL", "file": "db-url"},
		"stripe": {"var": "STRIPE_KEY", "aws_secret": %q},
		"github": {"var": "GITHUB_TOKEN", "gcp_secret": %q, "agents": ["refcheck"]}}}`, stripeARN, githubSecret)
	path := filepath.Join(dir, "config-refs.json")
	if err := os.WriteFile(path, []byte(allow), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &refsHost{aws: secretstores.StartAWS(t, map[string]string{stripeARN: refCanaries["STRIPE_KEY"]}),
		gcp: secretstores.StartGCP(t, map[string]string{githubSecret: refCanaries["GITHUB_TOKEN"]}), logs: &logbuf.Buffer{}}
	reg := functions.NewRegistry()
	reg.Register("refcheck", refCheck)
	fnprobe.Register(reg)
	policy := sortie.Policy{MaxAttempts: 2, BackoffMs: 1, HeartbeatMs: 100, LeaseMs: 1000}
	r.served = serve(t, host.Config{StateDir: filepath.Join(dir, "state"), InProcess: true, Registry: reg,
		Agents: sortie.Agents{"refcheck": {Name: "refcheck", Version: "1", Runtime: "go:refcheck", Policy: policy},
			"probe": {Name: "probe", Version: "1", Runtime: "go:probe"}},
		ConfigRefs: path, ConfigRefSecrets: r.secrets(t),
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
	return r
}

// secrets are the two stores' sources, their clients on loopback.
func (r *refsHost) secrets(t *testing.T) map[string]functions.SecretSource {
	sm := secretsmanager.NewFromConfig(aws.Config{Region: "eu-west-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")},
		func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(r.aws.URL) })
	gc, err := secretmanager.NewClient(t.Context(), option.WithEndpoint(r.gcp.Endpoint), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	return map[string]functions.SecretSource{functions.SourceAWSSecret: awssecrets.New(sm), functions.SourceGCPSecret: gcpsecrets.New(gc)}
}

// A secret referenced by ID reaches the handler from each source, is read
// again by each attempt, and appears nowhere else: not in the state
// directory (SQLite files, logs), the host's log or the API's answers.
func TestConfigRefsReachTheHandlerAndNothingElse(t *testing.T) {
	r := newRefsHost(t)
	run, err := r.client.Submit(t.Context(), &sortie.SubmitRequest{Agent: "refcheck", ConfigRefs: []string{"openai", "db", "stripe", "github"}})
	if err != nil {
		t.Fatalf("Submit(config_refs) over HTTP = %v", err)
	}
	done := wait(t, r.client, run.ID)
	if done.State != sortie.StateCompleted || done.Attempt != 2 {
		t.Fatalf("run = %s after attempt %d (%+v), want completed on attempt 2", done.State, done.Attempt, done.Error)
	}
	var seen map[string]bool
	if err := json.Unmarshal(done.Result, &seen); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"OPENAI_API_KEY": true, "DATABASE_URL": true, "STRIPE_KEY": true, "GITHUB_TOKEN": true}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("what the handler saw (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"openai", "db", "stripe", "github"}, done.ConfigRefs); d != "" {
		t.Errorf("the run's references (-want +got):\n%s", d)
	}
	if n, m := len(r.aws.Asked()), len(r.gcp.Asked()); n != 2 || m != 2 {
		t.Errorf("Secrets Manager asked %d times, Secret Manager %d, want 2 each: once per attempt", n, m)
	}
	texts := map[string]string{"the host's log": r.logs.String()}
	texts["the run over the API"], texts["its events over the API"], texts["the run list over the API"] = r.apiOutput(t, run.ID)
	noRefCanary(t, r.h.StateDir(), texts)
}

// apiOutput is what the host's API answers about a run.
func (r *refsHost) apiOutput(t *testing.T, id sortie.RunID) (run, events, list string) {
	t.Helper()
	get := func(path string) string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, r.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s = %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	return get("/v1/runs/" + id.String()), get("/v1/runs/" + id.String() + "/events"), get("/v1/runs")
}

// noRefCanary fails t when a canary is in a file under dir or a text.
func noRefCanary(t *testing.T, dir string, texts map[string]string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		texts[p] = string(b)
		return nil
	})
	if len(texts) < 5 {
		t.Fatalf("searched only %d places, want the state files, logs and API answers", len(texts))
	}
	for where, s := range texts {
		for name, v := range refCanaries {
			if strings.Contains(s, v) {
				t.Errorf("%s holds the value of %s", where, name)
			}
		}
	}
}

// An unknown reference, or one not allowed for the agent, is refused at
// submit (HTTP 400 naming config_refs) and nothing is stored.
func TestUnknownConfigRefIsRefusedAtSubmit(t *testing.T) {
	r := newRefsHost(t)
	for _, c := range []struct{ agent, ref string }{{"refcheck", "nope"}, {"probe", "github"}} {
		_, err := r.client.Submit(t.Context(), &sortie.SubmitRequest{Agent: c.agent, ConfigRefs: []string{c.ref}})
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "config_refs" || !strings.Contains(ve.Reason, c.ref) {
			t.Errorf("Submit(%s, config_refs [%s]) = %v, want a 400 naming config_refs and %s", c.agent, c.ref, err, c.ref)
		}
	}
	if page, err := r.client.List(t.Context(), sortie.ListQuery{}); err != nil || len(page.Runs) != 0 {
		t.Errorf("runs after refused submissions = %d (%v), want none", len(page.Runs), err)
	}
	if n := len(r.aws.Asked()) + len(r.gcp.Asked()); n != 0 {
		t.Errorf("secret stores asked %d times, want none", n)
	}
}
