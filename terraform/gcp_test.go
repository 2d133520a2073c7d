package terraform

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// awsSDKEnv are the AWS SDK's own variables (region and static
// credentials from Secret Manager) the Cloud Run containers get; the SDK,
// not functions/cloudrun, reads them.
var awsSDKEnv = map[string]bool{"AWS_REGION": true, "AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true}

// containerEnv returns the env of a Cloud Run container block: static env
// blocks and dynamic "env" blocks over a local map.
func (m *module) containerEnv(t *testing.T, c *hclsyntax.Body) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, b := range c.Blocks {
		switch {
		case b.Type == "env":
			env[m.str(b.Body, "name")] = m.str(b.Body, "value")
		case b.Type == "dynamic" && len(b.Labels) == 1 && b.Labels[0] == "env":
			m.envMap(t, b.Body.Attributes["for_each"].Expr, env)
		}
	}
	return env
}

func TestGCPContainerEnvironment(t *testing.T) {
	m := parseModule(t, "gcp")
	reads := map[string]bool{}
	for _, v := range goConsts(t, "../functions/cloudrun", "Env") {
		reads[v] = true
	}
	// Set by Cloud Run itself or per execution by the launcher, never by the module.
	notSet := []string{fncloudrun.EnvInvocation, fncloudrun.EnvPort, fncloudrun.EnvExecution}

	job := m.block(t, "resource", "google_cloud_run_v2_job", "worker")
	jobTask := child(t, child(t, job, "template"), "template")
	svc := child(t, m.block(t, "resource", "google_cloud_run_v2_service", "worker"), "template")
	cases := []struct {
		name     string
		body     *hclsyntax.Body
		mode     string
		required []string
	}{
		{"google_cloud_run_v2_job.worker", jobTask, fncloudrun.ModeJob, []string{fncloudrun.EnvMode, fncloudrun.EnvDynamoTable}},
		{"google_cloud_run_v2_service.worker", svc, fncloudrun.ModeService, []string{fncloudrun.EnvMode, fncloudrun.EnvDynamoTable, fncloudrun.EnvAudience}},
	}
	for _, c := range cases {
		env := m.containerEnv(t, child(t, c.body, "containers"))
		for k := range env {
			if !reads[k] && !awsSDKEnv[k] {
				t.Errorf("%s sets %s, which neither functions/cloudrun nor the AWS SDK reads", c.name, k)
			}
		}
		for _, k := range notSet {
			if _, ok := env[k]; ok {
				t.Errorf("%s sets %s, which Cloud Run or the launcher sets", c.name, k)
			}
		}
		for _, k := range append(c.required, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") {
			if env[k] == "" {
				t.Errorf("%s does not set %s", c.name, k)
			}
		}
		if env[fncloudrun.EnvMode] != c.mode {
			t.Errorf("%s: %s = %q, want %q", c.name, fncloudrun.EnvMode, env[fncloudrun.EnvMode], c.mode)
		}
		if _, ok := env[fncloudrun.EnvSQLitePath]; ok {
			t.Errorf("%s sets %s next to %s; exactly one control plane", c.name, fncloudrun.EnvSQLitePath, fncloudrun.EnvDynamoTable)
		}
		if got := m.str(c.body, "service_account"); got != "google_service_account.worker.email" {
			t.Errorf("%s runs as %s, want google_service_account.worker.email", c.name, got)
		}
	}
	if got := m.str(jobTask, "max_retries"); got != "0" {
		t.Errorf("google_cloud_run_v2_job.worker max_retries = %s, want 0 (Sortie owns retries)", got)
	}
	if got := m.str(child(t, child(t, svc, "containers"), "resources"), "cpu_idle"); got != "false" {
		t.Errorf("google_cloud_run_v2_service.worker cpu_idle = %s, want false (attempts run after the answer)", got)
	}
}

// runPermissions maps each Cloud Run Admin API method launchers/cloudrun
// calls to the IAM permissions it needs. A call missing here fails the test.
var runPermissions = map[string][]string{
	"RunJob":          {"run.jobs.run", "run.jobs.runWithOverrides"},
	"GetExecution":    {"run.executions.get"},
	"CancelExecution": {"run.executions.cancel"},
}

// launcherCalls returns the methods launchers/cloudrun calls on its jobs
// and execs clients (non-test files).
func launcherCalls(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../launchers/cloudrun/*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if recv, ok := sel.X.(*ast.SelectorExpr); ok && (recv.Sel.Name == "jobs" || recv.Sel.Name == "execs") {
					seen[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestGCPLauncherRoleAllowsWhatTheLauncherCalls(t *testing.T) {
	m := parseModule(t, "gcp")
	calls := launcherCalls(t)
	if len(calls) == 0 {
		t.Fatal("found no jobs/execs client calls in launchers/cloudrun; the parser no longer matches the code")
	}
	var want []string
	for _, c := range calls {
		p, ok := runPermissions[c]
		if !ok {
			t.Errorf("launchers/cloudrun calls %s; add its IAM permissions to runPermissions and gcp/iam.tf", c)
		}
		want = append(want, p...)
	}
	sort.Strings(want)
	role := m.block(t, "resource", "google_project_iam_custom_role", "launcher")
	got := m.strs(role, "permissions")
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("google_project_iam_custom_role.launcher permissions differ from launchers/cloudrun's calls %v (-want +module):\n%s", calls, d)
	}
	for _, name := range []string{"launcher"} {
		b := m.block(t, "resource", "google_cloud_run_v2_job_iam_member", name)
		if got := m.str(b, "role"); got != "google_project_iam_custom_role.launcher.id" {
			t.Errorf("google_cloud_run_v2_job_iam_member.%s role = %s, want the custom launcher role", name, got)
		}
		s := m.block(t, "resource", "google_cloud_run_v2_service_iam_member", name)
		if got := m.str(s, "role"); got != "roles/run.invoker" {
			t.Errorf("google_cloud_run_v2_service_iam_member.%s role = %s, want roles/run.invoker", name, got)
		}
	}
	if got := m.ofType("resource", "google_project_iam_member"); !slices.Equal(got, []string{"eventarc_receiver", "storage_pubsub_publisher"}) {
		t.Errorf("project-wide role grants %v, want only eventarc_receiver and storage_pubsub_publisher", got)
	}
	key := m.block(t, "resource", "google_kms_crypto_key", "config")
	if got := m.str(key, "rotation_period"); got != "var.key_rotation_period" {
		t.Errorf("google_kms_crypto_key.config rotation_period = %s, want var.key_rotation_period", got)
	}
}
