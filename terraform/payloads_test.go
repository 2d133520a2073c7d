package terraform

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	lambdafn "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/payload"
)

// What each gocloud.dev/blob Bucket method the payload store calls needs:
// the S3 actions s3blob's requests take (HeadObject is s3:GetObject; a
// large write is a multipart upload, s3:PutObject, aborted on failure) and
// the Cloud Storage permissions gcsblob's do (replacing an object needs
// delete too). A method missing here fails the test: add what it needs.
var (
	blobS3Actions = map[string][]string{
		"NewReader": {"s3:GetObject"}, "ReadAll": {"s3:GetObject"}, "Attributes": {"s3:GetObject"}, "Exists": {"s3:GetObject"},
		"WriteAll": {"s3:PutObject", "s3:AbortMultipartUpload"}, "NewWriter": {"s3:PutObject", "s3:AbortMultipartUpload"},
		"Delete": {"s3:DeleteObject"},
		"List":   {"s3:ListBucket"},
		// Signed locally; the URLs then read and write as the signer.
		"SignedURL": {"s3:GetObject", "s3:PutObject"},
	}
	blobGCSPermissions = map[string][]string{
		"NewReader": {"storage.objects.get"}, "ReadAll": {"storage.objects.get"}, "Attributes": {"storage.objects.get"}, "Exists": {"storage.objects.get"},
		"WriteAll": {"storage.objects.create", "storage.objects.delete"}, "NewWriter": {"storage.objects.create", "storage.objects.delete"},
		"Delete": {"storage.objects.delete"},
		"List":   {"storage.objects.list"},
		// The URLs read and write as the signer.
		"SignedURL": {"storage.objects.get", "storage.objects.create"},
	}
)

// bucketCalls returns the methods package payload calls on its bucket
// (X.bucket.Method).
func bucketCalls(t *testing.T) []string {
	t.Helper()
	calls := fieldCalls(t, "../payload", "bucket")
	if len(calls) == 0 {
		t.Fatal("package payload calls no X.bucket.Method; this test no longer sees how it uses its bucket")
	}
	return calls
}

// needs returns the sorted union of what the called methods need.
func needs(t *testing.T, calls []string, table map[string][]string) []string {
	t.Helper()
	var out []string
	for _, c := range calls {
		n, ok := table[c]
		if !ok {
			t.Fatalf("package payload calls Bucket.%s: add what it needs to the tables in payloads_test.go and grant it in both modules", c)
		}
		out = append(out, n...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// payloadPrefix is the key prefix of every payload object: what
// payload.Key puts before the run ID.
func payloadPrefix(t *testing.T) string {
	t.Helper()
	prefix, _, ok := strings.Cut(payload.Key("RUNID", "name"), "RUNID")
	if !ok || prefix == "" {
		t.Fatalf("payload.Key = %q, want PREFIX/RUNID/name", payload.Key("RUNID", "name"))
	}
	return prefix
}

// checkPayloadEnv checks the module's payload_bucket_url output names the
// variable hosts and the Lambda function read (functions/lambda's
// EnvPayloadBucket, which host's is) and a URL of scheme.
func checkPayloadEnv(t *testing.T, m *module, dir, scheme string) {
	t.Helper()
	env := goConsts(t, "../functions/lambda", "EnvPayload")["EnvPayloadBucket"]
	out := m.output(t, "payload_bucket_url")
	if d := m.str(out, "description"); !strings.Contains(d, env) || !strings.Contains(d, "--payload-bucket") {
		t.Errorf("%s: output payload_bucket_url description %q does not name %s and --payload-bucket", dir, d, env)
	}
	v := m.str(out, "value")
	if name, ok := strings.CutPrefix(v, "local."); ok && m.local(name) != nil {
		v = m.text(m.local(name))
	}
	if !strings.Contains(v, `"`+scheme+"://${") {
		t.Errorf("%s: output payload_bucket_url = %s, want a %s:// URL", dir, v, scheme)
	}
	if got := m.str(m.variable(t, "payload_store"), "default"); got != "true" {
		t.Errorf("%s: variable payload_store default = %s, want true", dir, got)
	}
	if got := m.text(m.local("payload_prefix")); got != payloadPrefix(t) {
		t.Errorf("%s: local.payload_prefix = %q, want %q, the prefix of payload.Key", dir, got, payloadPrefix(t))
	}
}

// TestAWSPayloadBucket checks the payload store's bucket and grants
// against package payload: the lifecycle rule expires what payload.Key
// names, and hosts get exactly the actions s3blob takes for the Bucket
// methods the store calls, under that prefix only; the reconciler
// function what the URLs it signs do; the worker function none (it uses
// the URLs its host or the reconciler signs).
func TestAWSPayloadBucket(t *testing.T) {
	m := parseModule(t, "aws")
	checkPayloadEnv(t, m, "aws", "s3")
	bucket := "aws_s3_bucket.payloads[0]"

	sse := child(t, child(t, m.block(t, "resource", "aws_s3_bucket_server_side_encryption_configuration", "payloads"), "rule"), "apply_server_side_encryption_by_default")
	if got := []string{m.str(sse, "sse_algorithm"), m.str(sse, "kms_master_key_id")}; !slices.Equal(got, []string{"aws:kms", "aws_kms_key.config.arn"}) {
		t.Errorf("payload bucket encryption (algorithm, key) = %v, want aws:kms with the deployment's key", got)
	}
	pab := m.block(t, "resource", "aws_s3_bucket_public_access_block", "payloads")
	for _, a := range []string{"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"} {
		if got := m.str(pab, a); got != "true" {
			t.Errorf("aws_s3_bucket_public_access_block.payloads.%s = %s, want true", a, got)
		}
	}
	own := child(t, m.block(t, "resource", "aws_s3_bucket_ownership_controls", "payloads"), "rule")
	if got := m.str(own, "object_ownership"); got != "BucketOwnerEnforced" {
		t.Errorf("payload bucket object_ownership = %s, want BucketOwnerEnforced (no ACLs)", got)
	}
	rule := child(t, m.block(t, "resource", "aws_s3_bucket_lifecycle_configuration", "payloads"), "rule")
	got := []string{m.str(rule, "status"), m.str(child(t, rule, "filter"), "prefix"), m.str(child(t, rule, "expiration"), "days")}
	if d := cmp.Diff([]string{"Enabled", "local.payload_prefix", "var.payload_retention_days"}, got); d != "" {
		t.Errorf("payload bucket lifecycle rule (status, prefix, days) (-want +module):\n%s", d)
	}

	tls := child(t, m.block(t, "data", "aws_iam_policy_document", "payloads_tls"), "statement")
	cond := child(t, tls, "condition")
	gotTLS := []string{m.str(tls, "effect"), strings.Join(m.strs(tls, "actions"), ","), strings.Join(m.strs(tls, "resources"), ","),
		m.str(cond, "test") + " " + m.str(cond, "variable") + "=" + strings.Join(m.strs(cond, "values"), ",")}
	wantTLS := []string{"Deny", "s3:*", bucket + ".arn,${" + bucket + ".arn}/*", "Bool aws:SecureTransport=false"}
	if d := cmp.Diff(wantTLS, gotTLS); d != "" {
		t.Errorf("payload bucket TLS-only policy (effect, actions, resources, condition) (-want +module):\n%s", d)
	}
	if got := m.str(m.block(t, "resource", "aws_s3_bucket_policy", "payloads"), "policy"); got != "data.aws_iam_policy_document.payloads_tls[0].json" {
		t.Errorf("aws_s3_bucket_policy.payloads.policy = %s, want the TLS-only document", got)
	}

	checkAWSPayloadGrants(t, m, bucket)
	checkReconcilerPayloadURL(t, m)
}

// checkAWSPayloadGrants checks the two documents of the bucket's grants
// against what package payload calls: payload_objects holds what a
// presigned URL does as its signer (SignedURL's actions, also the reads
// and writes) and the bucket key, for hosts and the reconciler function;
// payloads the rest, for hosts only; both documents together are exactly
// what the Bucket methods need, under the payload prefix.
func checkAWSPayloadGrants(t *testing.T, m *module, bucket string) {
	t.Helper()
	signed := blobS3Actions["SignedURL"]
	var manage, list []string
	for _, a := range needs(t, bucketCalls(t), blobS3Actions) {
		switch {
		case a == "s3:ListBucket":
			list = append(list, a)
		case !slices.Contains(signed, a):
			manage = append(manage, a)
		}
	}
	objects := []string{"${" + bucket + ".arn}/${local.payload_prefix}*"}
	wantObjects := map[string]grant{
		"ReadWritePayloads": {Actions: signed, Resources: objects},
		"PayloadBucketKey":  {Actions: []string{"kms:Decrypt", "kms:GenerateDataKey"}, Resources: []string{"aws_kms_key.config.arn"}, Condition: "StringEquals kms:EncryptionContext:aws:s3:arn=" + bucket + ".arn"},
	}
	want := map[string]grant{"ManagePayloads": {Actions: manage, Resources: objects}}
	if list != nil {
		want["ListPayloads"] = grant{Actions: list, Resources: []string{bucket + ".arn"}}
	}
	wantDeletes := map[string]grant{"DeletePayloads": {Actions: presignedDeletes(t, signed), Resources: objects}}
	for doc, w := range map[string]map[string]grant{"payload_objects": wantObjects, "payloads": want, "payload_deletes": wantDeletes} {
		if d := cmp.Diff(w, m.policy(t, doc)); d != "" {
			t.Errorf("data.aws_iam_policy_document.%s differs from what package payload calls (-want +module):\n%s", doc, d)
		}
	}
	hosts := "var.payload_store ? var.host_roles : toset([])"
	attached := map[string][]string{
		"host_payloads":              {"aws_iam_role.host[each.key].id", "data.aws_iam_policy_document.payloads[0].json", hosts},
		"host_payload_objects":       {"aws_iam_role.host[each.key].id", "data.aws_iam_policy_document.payload_objects[0].json", hosts},
		"reconciler_payload_objects": {"aws_iam_role.reconciler.id", "data.aws_iam_policy_document.payload_objects[0].json", "var.payload_store ? 1 : 0"},
		"reconciler_payload_deletes": {"aws_iam_role.reconciler.id", "data.aws_iam_policy_document.payload_deletes[0].json", "var.payload_store ? 1 : 0"},
		"trigger_payload_objects":    {"aws_iam_role.trigger.id", "data.aws_iam_policy_document.payload_objects[0].json", "var.payload_store ? 1 : 0"},
	}
	for _, name := range m.ofType("resource", "aws_iam_role_policy") {
		b := m.block(t, "resource", "aws_iam_role_policy", name)
		got := []string{m.str(b, "role"), m.str(b, "policy"), m.str(b, "for_each") + m.str(b, "count")}
		if w, ok := attached[name]; ok && !slices.Equal(got, w) {
			t.Errorf("aws_iam_role_policy.%s (role, policy, for_each/count) = %q, want %q", name, got, w)
		} else if !ok && strings.Contains(got[1], "payload") {
			t.Errorf("aws_iam_role_policy.%s grants the payload bucket: only hosts, the reconciler and the trigger reach it (workers use presigned URLs)", name)
		}
		delete(attached, name)
	}
	if len(attached) != 0 {
		t.Errorf("missing payload grants %v", slices.Sorted(maps.Keys(attached)))
	}
}

// checkReconcilerPayloadURL checks the functions that launch attempts,
// the reconciler and the trigger, get the bucket's URL (they sign the
// URLs of the attempts they launch), and the worker does not.
func checkReconcilerPayloadURL(t *testing.T, m *module) {
	t.Helper()
	for _, name := range m.ofType("resource", "aws_lambda_function") {
		env := map[string]string{}
		m.envMap(t, child(t, m.block(t, "resource", "aws_lambda_function", name), "environment").Attributes["variables"].Expr, env)
		want := ""
		if name == "reconciler" || name == "trigger" {
			want = "local.payload_bucket_url"
		}
		if got := env[lambdafn.EnvPayloadBucket]; got != want {
			t.Errorf("aws_lambda_function.%s: %s = %q, want %q (the reconciler and the trigger sign payload URLs, the worker uses them)", name, lambdafn.EnvPayloadBucket, got, want)
		}
	}
}

// presignedDeletes returns the S3 actions of the URLs package
// payload/s3presign signs (each x-id it sets, as "s3:ID") that are not
// in signed: what a DELETE URL does, which only the reconciler's
// retention signs.
func presignedDeletes(t *testing.T, signed []string) []string {
	t.Helper()
	src, err := os.ReadFile("../payload/s3presign/s3presign.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`q\.Set\("x-id", "(\w+)"\)`).FindAllStringSubmatch(string(src), -1) {
		if a := "s3:" + m[1]; !slices.Contains(signed, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		t.Fatal("package payload/s3presign sets no x-id beyond GET and PUT; this test no longer sees which URLs it signs")
	}
	return out
}

// TestGCPPayloadBucket checks the payload store's Cloud Storage bucket
// and grants against package payload, as TestAWSPayloadBucket does.
func TestGCPPayloadBucket(t *testing.T) {
	m := parseModule(t, "gcp")
	checkPayloadEnv(t, m, "gcp", "gs")
	b := m.block(t, "resource", "google_storage_bucket", "payloads")
	got := []string{m.str(b, "uniform_bucket_level_access"), m.str(b, "public_access_prevention"), m.str(child(t, b, "encryption"), "default_kms_key_name")}
	if d := cmp.Diff([]string{"true", "enforced", "google_kms_crypto_key.config.id"}, got); d != "" {
		t.Errorf("payload bucket (uniform access, public access prevention, key) (-want +module):\n%s", d)
	}
	rule := child(t, b, "lifecycle_rule")
	cond := child(t, rule, "condition")
	got = []string{m.str(child(t, rule, "action"), "type"), m.str(cond, "age"), strings.Join(m.strs(cond, "matches_prefix"), ",")}
	if d := cmp.Diff([]string{"Delete", "var.payload_retention_days", "local.payload_prefix"}, got); d != "" {
		t.Errorf("payload bucket lifecycle rule (action, age, prefix) (-want +module):\n%s", d)
	}
	// Cloud Storage encrypts as its service agent, which needs the key.
	key := m.block(t, "resource", "google_kms_crypto_key_iam_member", "payloads")
	got = []string{m.str(key, "crypto_key_id"), m.str(key, "role"), m.str(key, "member")}
	want := []string{"google_kms_crypto_key.config.id", "roles/cloudkms.cryptoKeyEncrypterDecrypter", "serviceAccount:${data.google_storage_project_service_account.gcs[0].email_address}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("google_kms_crypto_key_iam_member.payloads (key, role, member) (-want +module):\n%s", d)
	}

	role := m.block(t, "resource", "google_project_iam_custom_role", "payloads")
	if d := cmp.Diff(needs(t, bucketCalls(t), blobGCSPermissions), m.strs(role, "permissions")); d != "" {
		t.Errorf("google_project_iam_custom_role.payloads permissions differ from what package payload calls (-want +module):\n%s", d)
	}
	member := m.block(t, "resource", "google_storage_bucket_iam_member", "payloads")
	got = []string{m.str(member, "bucket"), m.str(member, "role"), m.str(member, "for_each")}
	want = []string{"google_storage_bucket.payloads[0].name", "google_project_iam_custom_role.payloads[0].id",
		"var.payload_store ? { launcher = google_service_account.launcher.member } : {}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("google_storage_bucket_iam_member.payloads (bucket, role, members) (-want +module):\n%s", d)
	}
	expr := m.str(child(t, member, "condition"), "expression")
	if !strings.Contains(expr, `resource.name.startsWith(\"projects/_/buckets/${local.payload_bucket}/objects/${local.payload_prefix}\")`) {
		t.Errorf("google_storage_bucket_iam_member.payloads condition %s does not limit objects to local.payload_prefix", expr)
	}
	signer := m.block(t, "resource", "google_project_iam_custom_role", "payload_signer")
	if d := cmp.Diff([]string{"iam.serviceAccounts.signBlob"}, m.strs(signer, "permissions")); d != "" {
		t.Errorf("google_project_iam_custom_role.payload_signer permissions (-want +module):\n%s", d)
	}
	sign := m.block(t, "resource", "google_service_account_iam_member", "payload_signer")
	got = []string{m.str(sign, "service_account_id"), m.str(sign, "role"), m.str(sign, "member")}
	want = []string{"google_service_account.launcher.name", "google_project_iam_custom_role.payload_signer[0].id", "google_service_account.launcher.member"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("google_service_account_iam_member.payload_signer (account, role, member): the launcher signs as itself only (-want +module):\n%s", d)
	}
	if got := m.str(b, "name"); got != "local.payload_bucket" {
		t.Errorf("google_storage_bucket.payloads.name = %s, want local.payload_bucket (the name the grant's condition uses)", got)
	}
}
