package functions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
)

const refCanary = "canary-7c1d-value-never-stored"

// mapSecrets is a secret store in memory: name → value; names missing
// are not found.
type mapSecrets map[string]string

func (m mapSecrets) Secret(_ context.Context, name string) ([]byte, error) {
	v, ok := m[name]
	if !ok {
		return nil, &SecretError{Code: "ResourceNotFoundException", Err: sortie.ErrNotFound}
	}
	return []byte(v), nil
}

func testRefs(t *testing.T) *ConfigRefs {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "db-url"), []byte(refCanary+"-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := `{"version": "sortie.configrefs/v1", "refs": {
		"openai": {"var": "OPENAI_API_KEY", "env": "HOST_OPENAI_KEY"},
		"db":     {"var": "DATABASE_URL", "file": "db-url", "agents": ["test"]},
		"stripe": {"var": "STRIPE_KEY", "aws_secret": "arn:aws:secretsmanager:eu-west-1:1:secret:stripe-AbC"},
		"other":  {"var": "OTHER", "env": "X", "agents": ["someone-else"]},
		"gone":   {"var": "GONE", "aws_secret": "missing"},
		"short":  {"var": "SHORT", "env": "HOST_SHORT"}}}`
	path := filepath.Join(dir, "config-refs.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfigRefs(path)
	if err != nil {
		t.Fatalf("LoadConfigRefs = %v", err)
	}
	c.LookupEnv = func(k string) (string, bool) {
		switch k {
		case "HOST_OPENAI_KEY":
			return refCanary + "-env", true
		case "HOST_SHORT":
			return "s3cr3t7", true
		}
		return "", false
	}
	c.Secrets = map[string]SecretSource{SourceAWSSecret: mapSecrets{"arn:aws:secretsmanager:eu-west-1:1:secret:stripe-AbC": refCanary + "-aws"}}
	return c
}

func TestConfigRefsReachTheHandler(t *testing.T) {
	var seen map[string]string
	w, logs := newWorker(configHandler(&seen))
	w.ConfigRefs = testRefs(t)
	inv := testInvocation("go:h", "")
	inv.ConfigRefs = []string{"openai", "db", "stripe"}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	if o := rep.finished(); o.Error != nil {
		t.Fatalf("Execute finished with %+v, want a result", o.Error)
	}
	want := map[string]string{"OPENAI_API_KEY": refCanary + "-env", "DATABASE_URL": refCanary + "-file", "STRIPE_KEY": refCanary + "-aws"}
	if d := cmp.Diff(want, seen); d != "" {
		t.Errorf("Call.Config() (-want +got):\n%s", d)
	}
	if strings.Contains(logs.String(), refCanary) {
		t.Errorf("worker logs hold a referenced value: %s", logs)
	}
}

func TestConfigRefsFailuresNameTheIDOnly(t *testing.T) {
	for _, c := range []struct {
		name, refs string
		typ        string
		retryable  bool
		says       string
	}{
		{"unknown at the worker", "nope", sortie.ErrorTypeRejected, false, `"nope" is not a configuration reference`},
		{"another agent's", "other", sortie.ErrorTypeRejected, false, `"other" is not available to agent test`},
		{"secret missing", "gone", errTypeConfig, false, `configuration reference "gone" (aws_secret): not found in the secret store (ResourceNotFoundException)`},
		{"too short to mask", "short", errTypeConfig, false, `configuration reference "short" (env): the value is 7 bytes, under 8`},
	} {
		var seen map[string]string
		w, _ := newWorker(configHandler(&seen))
		w.ConfigRefs = testRefs(t)
		inv := testInvocation("go:h", "")
		inv.ConfigRefs = []string{c.refs}
		rep := newRecorder(t)
		if _, err := w.Execute(context.Background(), inv, rep); err != nil {
			t.Fatalf("%s: Execute = %v", c.name, err)
		}
		o := rep.finished()
		if o.Error == nil || o.Error.Type != c.typ || o.Error.Retryable != c.retryable || !strings.Contains(o.Error.Message, c.says) {
			t.Errorf("%s: outcome %+v, want error type %s (retryable %v) saying %q", c.name, o.Error, c.typ, c.retryable, c.says)
		}
		if o.Error != nil && (strings.Contains(o.Error.Message, "arn:") || strings.Contains(o.Error.Message, "missing") || strings.Contains(o.Error.Message, "s3cr3t7")) {
			t.Errorf("%s: the error %q names the reference's source", c.name, o.Error.Message)
		}
		if seen != nil {
			t.Errorf("%s: the handler ran", c.name)
		}
	}
}

func TestConfigRefsOffByDefault(t *testing.T) {
	w, _ := newWorker(register(func(context.Context, *Call) (any, error) { return "ran", nil }))
	inv := testInvocation("go:h", "")
	inv.ConfigRefs = []string{"openai"}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	if o := rep.finished(); o.Error == nil || o.Error.Type != sortie.ErrorTypeRejected {
		t.Errorf("Execute(references, no allowlist) = %+v, want rejected", o)
	}
}

func TestCheckConfigRefs(t *testing.T) {
	c := testRefs(t)
	c.Refs["openai2"] = ConfigRef{Var: "OPENAI_API_KEY", Source: SourceEnv, Name: "Y"}
	for refs, want := range map[string]string{
		"openai,db":      "",
		"openai,openai2": `"openai" and "openai2" both set OPENAI_API_KEY`,
		"nope":           `"nope" is not a configuration reference of this host (one of db, gone, openai, openai2, other, short, stripe)`,
		"db":             "",
	} {
		err := c.CheckConfigRefs("test", strings.Split(refs, ","))
		var ve *sortie.ValidationError
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckConfigRefs(%s) = %v, want nil", refs, err)
		case want != "" && (!errors.As(err, &ve) || ve.Field != "config_refs" || ve.Reason != want):
			t.Errorf("CheckConfigRefs(%s) = %v, want config_refs: %s", refs, err, want)
		}
	}
	if err := c.CheckConfigRefs("report", []string{"db"}); err == nil {
		t.Errorf("CheckConfigRefs(db) for agent report = nil, want a refusal (db is for agent test)")
	}
}

func TestParseConfigRefsNamesTheField(t *testing.T) {
	for field, doc := range map[string]string{
		"version":           `{"version": "v0", "refs": {}}`,
		"refs":              `{"version": "sortie.configrefs/v1", "refs": {}, "extra": 1}`,
		"refs.Bad":          `{"version": "sortie.configrefs/v1", "refs": {"Bad": {"var": "X", "env": "X"}}}`,
		"refs.a.var":        `{"version": "sortie.configrefs/v1", "refs": {"a": {"var": "1X", "env": "X"}}}`,
		"refs.b":            `{"version": "sortie.configrefs/v1", "refs": {"b": {"var": "X", "env": "X", "file": "/f"}}}`,
		"refs.c.var":        `{"version": "sortie.configrefs/v1", "refs": {"c": {"var": "X"}}}`,
		"refs.d.gcp_secret": `{"version": "sortie.configrefs/v1", "refs": {"d": {"var": "X", "gcp_secret": "secrets/s"}}}`,
		"refs.e.agents":     `{"version": "sortie.configrefs/v1", "refs": {"e": {"var": "X", "env": "X", "agents": ["A B"]}}}`,
	} {
		_, err := ParseConfigRefs([]byte(doc), ".")
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("ParseConfigRefs(%s) = %v, want a ValidationError for %s", doc, err, field)
		}
	}
	c, err := LoadConfigRefs(`{"version": "sortie.configrefs/v1", "refs": {"g": {"var": "G", "gcp_secret": "projects/p/secrets/s"}}}`)
	if err != nil || c.Refs["g"].Source != SourceGCPSecret {
		t.Errorf("LoadConfigRefs(an inline document) = %+v, %v; want reference g from Secret Manager", c, err)
	}
}

func TestConfigRefsAndInlineConfigMustNotCollide(t *testing.T) {
	var seen map[string]string
	w, _ := newWorker(configHandler(&seen))
	w.ConfigRefs = testRefs(t)
	inv := testInvocation("go:h", "")
	inv.ConfigRefs = []string{"openai"}
	w.InlineConfig = &InlineConfig{Opener: sealedFor(t, inv, `{"OPENAI_API_KEY":"inline"}`, localTestKEK(t)), Allow: []string{"OPENAI_API_KEY"}}
	rep := newRecorder(t)
	if _, err := w.Execute(context.Background(), inv, rep); err != nil {
		t.Fatal(err)
	}
	o := rep.finished()
	if o.Error == nil || o.Error.Type != sortie.ErrorTypeRejected || !strings.Contains(o.Error.Message, "OPENAI_API_KEY") || seen != nil {
		t.Errorf("Execute(inline and referenced OPENAI_API_KEY) = %+v, handler saw %v; want rejected naming the variable", o.Error, seen)
	}
}
