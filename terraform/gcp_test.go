package terraform

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sortie-run/sortie/crypto/gcpkms"
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
	for _, dir := range []string{"../functions/cloudrun", "../destination"} {
		for _, v := range goConsts(t, dir, "Env") {
			reads[v] = true
		}
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
		{"google_cloud_run_v2_job.worker", jobTask, fncloudrun.ModeJob, nil},
		{"google_cloud_run_v2_service.worker", svc, fncloudrun.ModeService, []string{fncloudrun.EnvAudience, fncloudrun.EnvCallers}},
	}
	// Every container opens inline configuration with the key, and may
	// reach the table by federation or, as a fallback, a stored key.
	always := []string{fncloudrun.EnvMode, fncloudrun.EnvKMSKeys, fncloudrun.EnvConfigEnv, fncloudrun.EnvDynamoTable,
		fncloudrun.EnvMemory, fncloudrun.EnvCPU,
		fncloudrun.EnvAWSRoleARN, fncloudrun.EnvAWSTokenAudience, "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
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
		for _, k := range append(c.required, always...) {
			if env[k] == "" {
				t.Errorf("%s does not set %s", c.name, k)
			}
		}
		if env[fncloudrun.EnvMode] != c.mode {
			t.Errorf("%s: %s = %q, want %q", c.name, fncloudrun.EnvMode, env[fncloudrun.EnvMode], c.mode)
		}
		if _, ok := env[fncloudrun.EnvSQLitePath]; ok {
			t.Errorf("%s sets %s next to %s; at most one control plane", c.name, fncloudrun.EnvSQLitePath, fncloudrun.EnvDynamoTable)
		}
		if got := env[fncloudrun.EnvKMSKeys]; got != "local.kms_keys" {
			t.Errorf("%s: %s = %s, want local.kms_keys", c.name, fncloudrun.EnvKMSKeys, got)
		}
		if got := m.str(c.body, "service_account"); got != "google_service_account.worker.email" {
			t.Errorf("%s runs as %s, want google_service_account.worker.email", c.name, got)
		}
	}
	if got := m.text(m.local("kms_keys")); got != "${var.kms_key_label}=${google_kms_crypto_key.config.id}" {
		t.Errorf("local.kms_keys = %s, want LABEL=the key's name", got)
	}
	// No control plane and no stored key unless asked for: by default the
	// workers report over callbacks.
	for _, v := range []string{"dynamodb_table", "aws_role_arn", "aws_access_key_id_secret", "aws_secret_access_key_secret"} {
		if got := m.str(m.variable(t, v), "default"); got != "null" {
			t.Errorf("variable %s default = %s, want null", v, got)
		}
	}
	if got := m.str(m.variable(t, "aws_token_audience"), "default"); got != fncloudrun.DefaultAWSTokenAudience {
		t.Errorf("variable aws_token_audience default = %q, want the container's %q", got, fncloudrun.DefaultAWSTokenAudience)
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
	return fieldCalls(t, "../launchers/cloudrun", "jobs", "execs")
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

// kmsPermissions maps each Cloud KMS method crypto/gcpkms calls (its API
// interface) to the IAM permission it needs.
var kmsPermissions = map[string]string{
	"Encrypt": "cloudkms.cryptoKeyVersions.useToEncrypt",
	"Decrypt": "cloudkms.cryptoKeyVersions.useToDecrypt",
}

// kmsRoles are the key-level predefined roles' use permissions.
var kmsRoles = map[string][]string{
	"roles/cloudkms.cryptoKeyEncrypterDecrypter": {"cloudkms.cryptoKeyVersions.useToDecrypt", "cloudkms.cryptoKeyVersions.useToEncrypt"},
	"roles/cloudkms.cryptoKeyDecrypter":          {"cloudkms.cryptoKeyVersions.useToDecrypt"},
	"roles/cloudkms.cryptoKeyEncrypter":          {"cloudkms.cryptoKeyVersions.useToEncrypt"},
}

// The host (the launcher service account) may call every Cloud KMS method
// gcpkms.API has, on the module's key only: it seals (Encrypt) and
// re-seals the copy at rest (Decrypt). The worker opens (Decrypt) and
// seals the results it keeps by reference (Encrypt).
// Cloud KMS IAM has no condition on the AAD, so neither grant is split by
// purpose (see gcp/kms.tf).
func TestGCPKeyGrants(t *testing.T) {
	m := parseModule(t, "gcp")
	var all []string
	for _, a := range apiActions[gcpkms.API]("", nil) {
		p, ok := kmsPermissions[strings.TrimPrefix(a, ":")]
		if !ok {
			t.Fatalf("gcpkms.API has method %s; add its permission to kmsPermissions and grant it in gcp/kms.tf", a)
		}
		all = append(all, p)
	}
	sort.Strings(all)
	worker := []string{kmsPermissions["Decrypt"], kmsPermissions["Encrypt"]}
	slices.Sort(worker)
	want := map[string][]string{"launcher": all, "worker": worker}
	names := m.ofType("resource", "google_kms_crypto_key_iam_member")
	slices.Sort(names)
	// payloads: Cloud Storage's service agent, for the payload bucket's
	// CMEK (TestGCPPayloadBucket).
	if d := cmp.Diff([]string{"launcher", "payloads", "worker"}, names); d != "" {
		t.Fatalf("google_kms_crypto_key_iam_member grants (-want +module):\n%s", d)
	}
	for who, perms := range want {
		b := m.block(t, "resource", "google_kms_crypto_key_iam_member", who)
		if d := cmp.Diff(perms, kmsRoles[m.str(b, "role")]); d != "" {
			t.Errorf("google_kms_crypto_key_iam_member.%s role %s grants (-what the code calls +role):\n%s", who, m.str(b, "role"), d)
		}
		if got := m.str(b, "member"); got != "google_service_account."+who+".member" {
			t.Errorf("google_kms_crypto_key_iam_member.%s member = %s, want the %s service account", who, got, who)
		}
		if got := m.str(b, "crypto_key_id"); got != "google_kms_crypto_key.config.id" {
			t.Errorf("google_kms_crypto_key_iam_member.%s key = %s, want the module's key", who, got)
		}
	}
	gke := m.block(t, "resource", "google_service_account_iam_member", "host_gke")
	got := []string{m.str(gke, "service_account_id"), m.str(gke, "role"), m.str(gke, "member")}
	wantGKE := []string{"google_service_account.launcher.name", "roles/iam.workloadIdentityUser", "serviceAccount:${var.project}.svc.id.goog[${each.value}]"}
	if d := cmp.Diff(wantGKE, got); d != "" {
		t.Errorf("google_service_account_iam_member.host_gke (service account, role, member) (-want +module):\n%s", d)
	}
}

// TestGCPServiceMode checks the service's place: attempts run on the Job
// by default (the service is deployed for attempts only with var.service,
// or for an Eventarc trigger's events), a service that runs attempts keeps
// at least one instance, and its ID-token check takes the launchers' and
// Eventarc's accounts as its callers.
func TestGCPServiceMode(t *testing.T) {
	m := parseModule(t, "gcp")
	svc := m.block(t, "resource", "google_cloud_run_v2_service", "worker")
	if got := m.str(svc, "count"); got != "local.service_enabled ? 1 : 0" {
		t.Errorf("google_cloud_run_v2_service.worker count = %q, want local.service_enabled ? 1 : 0", got)
	}
	if got := m.text(m.local("service_enabled")); got != "var.service || var.eventarc != null" {
		t.Errorf("local.service_enabled = %q, want var.service || var.eventarc != null", got)
	}
	if got := m.str(m.variable(t, "service"), "default"); got != "false" {
		t.Errorf("variable service default = %s, want false (attempts on the Job)", got)
	}
	if got := m.str(m.variable(t, "service_min_instances"), "default"); got != "1" {
		t.Errorf("variable service_min_instances default = %s, want 1", got)
	}
	scaling := child(t, child(t, svc, "template"), "scaling")
	if got := m.str(scaling, "min_instance_count"); got != "var.service ? var.service_min_instances : 0" {
		t.Errorf("service scaling.min_instance_count = %q, want var.service ? var.service_min_instances : 0", got)
	}
	env := m.containerEnv(t, child(t, child(t, svc, "template"), "containers"))
	if got := env[fncloudrun.EnvCallers]; got != `join(",", local.service_callers)` {
		t.Errorf("service %s = %s, want join(\",\", local.service_callers)", fncloudrun.EnvCallers, got)
	}
	callers := m.text(m.local("service_callers"))
	for _, want := range []string{"local.launchers", "google_service_account.eventarc[0].email"} {
		if !strings.Contains(callers, want) {
			t.Errorf("local.service_callers = %s, want it to take %s", callers, want)
		}
	}
}
