package terraform

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/sortie-run/sortie/functions"
	"github.com/sortie-run/sortie/functions/awssecrets"
	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	lambdafn "github.com/sortie-run/sortie/functions/lambda"
)

// sampleRefs is an allowlist naming every source, a Secrets Manager
// secret by ARN and by name, the same ARN twice, and Secret Manager
// secrets with and without a version.
const sampleRefs = `{"version": "sortie.configrefs/v1", "refs": {
	"stripe":  {"var": "STRIPE_KEY", "aws_secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"},
	"stripe2": {"var": "STRIPE_KEY2", "aws_secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:stripe-AbC"},
	"db":      {"var": "DB_URL", "aws_secret": "prod/db"},
	"openai":  {"var": "OPENAI_API_KEY", "env": "OPENAI_API_KEY"},
	"cert":    {"var": "CERT", "file": "/etc/cert.pem"},
	"github":  {"var": "GITHUB_TOKEN", "gcp_secret": "projects/p/secrets/github"},
	"slack":   {"var": "SLACK_TOKEN", "gcp_secret": "projects/p/secrets/slack/versions/3"}}}`

// evalLocal evaluates local name of m with var.config_refs set to doc and
// the data sources of an account, as OpenTofu would.
func evalLocal(t *testing.T, m *module, name, doc string) cty.Value {
	t.Helper()
	obj := func(kv map[string]cty.Value) cty.Value { return cty.ObjectVal(kv) }
	current := func(attr, v string) cty.Value {
		return obj(map[string]cty.Value{"current": obj(map[string]cty.Value{attr: cty.StringVal(v)})})
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var": obj(map[string]cty.Value{"config_refs": cty.StringVal(doc)}),
			"data": obj(map[string]cty.Value{"aws_partition": current("partition", "aws"), "aws_region": current("name", "eu-west-1"),
				"aws_caller_identity": current("account_id", "111122223333")}),
		},
		Functions: map[string]function.Function{"jsondecode": stdlib.JSONDecodeFunc, "values": stdlib.ValuesFunc,
			"distinct": stdlib.DistinctFunc, "substr": stdlib.SubstrFunc, "regex": stdlib.RegexFunc, "toset": toset,
			"try": tryfunc.TryFunc, "can": tryfunc.CanFunc},
	}
	refs, diags := m.local("config_refs").Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("local.config_refs: %v", diags)
	}
	ctx.Variables["local"] = obj(map[string]cty.Value{"config_refs": refs})
	v, diags := m.local(name).Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("local.%s: %v", name, diags)
	}
	return v
}

// toset is OpenTofu's toset for lists of strings.
var toset = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Set(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return convert.Convert(args[0], cty.Set(cty.String))
	},
})

// sortedStrings returns the strings of a list, tuple or set, sorted.
func sortedStrings(v cty.Value) []string {
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	slices.Sort(out)
	return out
}

// The AWS worker's role may read exactly the Secrets Manager secrets its
// allowlist names: the module derives them from the same document the
// worker gets, as functions reads it.
func TestAWSWorkerReadsExactlyTheSecretsItsAllowlistNames(t *testing.T) {
	m := parseModule(t, "aws")
	refs, err := functions.LoadConfigRefs(sampleRefs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range refs.Names(functions.SourceAWSSecret) {
		if !strings.HasPrefix(name, "arn:") {
			name = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:" + name + "-??????"
		}
		want = append(want, name)
	}
	slices.Sort(want)
	if d := cmp.Diff(want, sortedStrings(evalLocal(t, m, "config_ref_secrets", sampleRefs))); d != "" {
		t.Errorf("local.config_ref_secrets for the sample allowlist (-functions +module):\n%s", d)
	}
	if got := evalLocal(t, m, "config_ref_secrets", ""); got.LengthInt() != 0 {
		t.Errorf("local.config_ref_secrets without an allowlist = %v, want none", got)
	}
	actions := apiActions[awssecrets.API]("secretsmanager", nil)
	got := m.policy(t, "worker_config_secrets")
	if d := cmp.Diff(map[string]grant{"ReadConfigRefSecrets": {Actions: actions, Resources: []string{"local.config_ref_secrets"}}}, got); d != "" {
		t.Errorf("data.aws_iam_policy_document.worker_config_secrets (-want +module):\n%s", d)
	}
	attach := m.block(t, "resource", "aws_iam_role_policy", "worker_config_secrets")
	doc := m.block(t, "data", "aws_iam_policy_document", "worker_config_secrets")
	const some = "length(local.config_ref_secrets) > 0 ? 1 : 0"
	for what, got := range map[string]string{"role": m.str(attach, "role"), "policy": m.str(attach, "policy"),
		"count": m.str(attach, "count"), "document count": m.str(doc, "count")} {
		want := map[string]string{"role": "aws_iam_role.worker.id", "policy": "data.aws_iam_policy_document.worker_config_secrets[0].json",
			"count": some, "document count": some}[what]
		if got != want {
			t.Errorf("worker_config_secrets %s = %s, want %s (the worker's role, only when the allowlist names a secret)", what, got, want)
		}
	}
	for _, fn := range []string{"worker", "trigger"} {
		env := map[string]string{}
		m.envMap(t, child(t, m.block(t, "resource", "aws_lambda_function", fn), "environment").Attributes["variables"].Expr, env)
		if env[lambdafn.EnvConfigRefs] != "var.config_refs" {
			t.Errorf("aws_lambda_function.%s: %s = %q, want var.config_refs", fn, lambdafn.EnvConfigRefs, env[lambdafn.EnvConfigRefs])
		}
	}
}

// The GCP worker's service account may read exactly the Secret Manager
// secrets its allowlist names.
func TestGCPWorkerReadsExactlyTheSecretsItsAllowlistNames(t *testing.T) {
	m := parseModule(t, "gcp")
	refs, err := functions.LoadConfigRefs(sampleRefs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range refs.Names(functions.SourceGCPSecret) {
		secret, _, _ := strings.Cut(name, "/versions/")
		want = append(want, secret)
	}
	slices.Sort(want)
	if d := cmp.Diff(want, sortedStrings(evalLocal(t, m, "config_ref_secrets", sampleRefs))); d != "" {
		t.Errorf("local.config_ref_secrets for the sample allowlist (-functions +module):\n%s", d)
	}
	grant := m.block(t, "resource", "google_secret_manager_secret_iam_member", "config_refs")
	for attr, w := range map[string]string{"for_each": "local.config_ref_secrets", "secret_id": "each.value",
		"role": "roles/secretmanager.secretAccessor", "member": "google_service_account.worker.member"} {
		if got := m.str(grant, attr); got != w {
			t.Errorf("google_secret_manager_secret_iam_member.config_refs.%s = %s, want %s", attr, got, w)
		}
	}
	env := map[string]string{}
	m.envMap(t, m.local("worker_env"), env)
	if env[fncloudrun.EnvConfigRefs] != "var.config_refs" {
		t.Errorf("local.worker_env: %s = %q, want var.config_refs", fncloudrun.EnvConfigRefs, env[fncloudrun.EnvConfigRefs])
	}
}
