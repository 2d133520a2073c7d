package terraform

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie/controlplane/dynamo"
	"github.com/sortie-run/sortie/controlplane/dynamo/dynamostream"
	"github.com/sortie-run/sortie/crypto/awskms"
	"github.com/sortie-run/sortie/crypto/envelope"
	"github.com/sortie-run/sortie/host/awshost"
	lambdalauncher "github.com/sortie-run/sortie/launchers/lambda"
)

// The deployment's page-token key is random, sealed by its KMS key with
// the encryption context hosts open it with, and an output hosts set as
// SORTIE_PAGE_TOKEN_KEY_SEALED.
func TestAWSPageTokenKey(t *testing.T) {
	m := parseModule(t, "aws")
	raw := m.block(t, "resource", "random_bytes", "page_token_key")
	if got := m.str(raw, "length"); got != "32" {
		t.Errorf("random_bytes.page_token_key.length = %s, want 32", got)
	}
	ct := m.block(t, "resource", "aws_kms_ciphertext", "page_token_key")
	if got := m.str(ct, "key_id"); got != "aws_kms_key.config.key_id" {
		t.Errorf("aws_kms_ciphertext.page_token_key.key_id = %s, want the deployment's key", got)
	}
	if got := m.str(ct, "plaintext"); got != "random_bytes.page_token_key.base64" {
		t.Errorf("aws_kms_ciphertext.page_token_key.plaintext = %s, want the key's base64 (what ParsePageTokenKey reads)", got)
	}
	if got, want := m.str(ct, "context"), fmt.Sprintf("{ purpose = %q }", awshost.PageTokenPurpose); got != want {
		t.Errorf("aws_kms_ciphertext.page_token_key.context = %s, want %s", got, want)
	}
	out := m.output(t, "page_token_key_sealed")
	if got := m.str(out, "value"); got != "aws_kms_ciphertext.page_token_key.ciphertext_blob" {
		t.Errorf("output page_token_key_sealed = %s, want the ciphertext", got)
	}
}

func TestAWSTableIsTableDefinition(t *testing.T) {
	m := parseModule(t, "aws")
	tbl := m.block(t, "resource", "aws_dynamodb_table", "runs")
	def := dynamo.TableDefinition("t")

	type index struct{ Name, Hash, Range, Projection string }
	want := struct {
		Billing, Hash, Range string
		Attrs                map[string]string
		Indexes              []index
	}{Billing: string(def.BillingMode), Attrs: map[string]string{}}
	for _, k := range def.KeySchema {
		if k.KeyType == "HASH" {
			want.Hash = aws.ToString(k.AttributeName)
		} else {
			want.Range = aws.ToString(k.AttributeName)
		}
	}
	for _, a := range def.AttributeDefinitions {
		want.Attrs[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	for _, g := range def.GlobalSecondaryIndexes {
		want.Indexes = append(want.Indexes, index{aws.ToString(g.IndexName), aws.ToString(g.KeySchema[0].AttributeName),
			aws.ToString(g.KeySchema[1].AttributeName), string(g.Projection.ProjectionType)})
	}

	got := want
	got.Billing, got.Hash, got.Range = m.str(tbl, "billing_mode"), m.str(tbl, "hash_key"), m.str(tbl, "range_key")
	got.Attrs, got.Indexes = map[string]string{}, nil
	for _, a := range children(tbl, "attribute") {
		got.Attrs[m.str(a, "name")] = m.str(a, "type")
	}
	for _, g := range children(tbl, "global_secondary_index") {
		got.Indexes = append(got.Indexes, index{m.str(g, "name"), m.str(g, "hash_key"), m.str(g, "range_key"), m.str(g, "projection_type")})
	}
	byName := func(a, b index) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(want.Indexes, byName)
	slices.SortFunc(got.Indexes, byName)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("aws_dynamodb_table.runs differs from dynamo.TableDefinition (-code +module):\n%s", d)
	}

	ttl := child(t, tbl, "ttl")
	if got, want := m.str(ttl, "attribute_name"), dynamo.AttrTTL; got != want {
		t.Errorf("ttl.attribute_name = %q, want dynamo.AttrTTL %q", got, want)
	}
	if got := m.str(ttl, "enabled"); got != "true" {
		t.Errorf("ttl.enabled = %s, want true", got)
	}
	if got := m.str(child(t, tbl, "point_in_time_recovery"), "enabled"); got != "var.point_in_time_recovery" {
		t.Errorf("point_in_time_recovery.enabled = %s, want var.point_in_time_recovery", got)
	}
	stream := def.StreamSpecification
	if got := m.str(tbl, "stream_enabled"); got != fmt.Sprint(aws.ToBool(stream.StreamEnabled)) {
		t.Errorf("stream_enabled = %s, want %v as dynamo.TableDefinition", got, aws.ToBool(stream.StreamEnabled))
	}
	if got := m.str(tbl, "stream_view_type"); got != string(stream.StreamViewType) {
		t.Errorf("stream_view_type = %s, want %s as dynamo.TableDefinition", got, stream.StreamViewType)
	}
}

// apiActions returns "prefix:Method" for every method of the interface I
// (the part of an SDK client the code calls through), renamed by rename.
func apiActions[I any](prefix string, rename map[string]string) []string {
	typ := reflect.TypeFor[I]()
	var out []string
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if r, ok := rename[name]; ok {
			name = r
		}
		out = append(out, prefix+":"+name)
	}
	sort.Strings(out)
	return out
}

// grant is one statement of a policy document, as the test compares it.
type grant struct {
	Actions   []string
	Resources []string
	Condition string // "test variable=values", or ""
}

func (m *module) policy(t *testing.T, name string) map[string]grant {
	t.Helper()
	doc := m.block(t, "data", "aws_iam_policy_document", name)
	out := map[string]grant{}
	for _, s := range children(doc, "statement") {
		sid := m.str(s, "sid")
		if _, dup := out[sid]; dup || sid == "" {
			t.Fatalf("policy %s: statement sid %q missing or repeated", name, sid)
		}
		if e := m.str(s, "effect"); e != "" && e != "Allow" {
			t.Fatalf("policy %s statement %s: effect %s, want Allow", name, sid, e)
		}
		g := grant{Actions: m.strs(s, "actions"), Resources: m.strs(s, "resources")}
		sort.Strings(g.Actions)
		var conds []string
		for _, c := range children(s, "condition") {
			conds = append(conds, m.str(c, "test")+" "+m.str(c, "variable")+"="+strings.Join(m.strs(c, "values"), ","))
		}
		g.Condition = strings.Join(conds, "; ")
		out[sid] = g
	}
	return out
}

// checkPolicy compares data.aws_iam_policy_document.NAME with want and
// refuses wildcard actions and resources not of this module.
func checkPolicy(t *testing.T, m *module, name string, want map[string]grant) {
	t.Helper()
	got := m.policy(t, name)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("data.aws_iam_policy_document.%s differs from what the code calls (-want +module):\n%s", name, d)
	}
	for sid, g := range got {
		for _, a := range g.Actions {
			if strings.Contains(a, "*") {
				t.Errorf("policy %s statement %s: wildcard action %q", name, sid, a)
			}
		}
		for _, r := range g.Resources {
			if r == "*" || strings.HasPrefix(r, "arn:") {
				t.Errorf("policy %s statement %s: resource %q, want a reference to this module's resources", name, sid, r)
			}
		}
	}
}

// checkAttached checks aws_iam_role_policy.NAME attaches the document
// NAME to role.
func checkAttached(t *testing.T, m *module, name, role string) {
	t.Helper()
	attach := m.block(t, "resource", "aws_iam_role_policy", name)
	if got := m.str(attach, "role"); got != role {
		t.Errorf("aws_iam_role_policy.%s.role = %s, want %s", name, got, role)
	}
	if got, want := m.str(attach, "policy"), "data.aws_iam_policy_document."+name+".json"; got != want {
		t.Errorf("aws_iam_role_policy.%s.policy = %s, want %s", name, got, want)
	}
}

func TestAWSPoliciesAllowWhatTheCodeCalls(t *testing.T) {
	m := parseModule(t, "aws")
	// Every method of the interfaces the code calls through is an action
	// some function needs; a new method without a grant fails here.
	items := apiActions[dynamo.API]("dynamodb", nil)
	kms := apiActions[awskms.API]("kms", nil)
	invoke := apiActions[lambdalauncher.API]("lambda", map[string]string{"Invoke": "InvokeFunction"})
	if d := cmp.Diff([]string{"kms:Decrypt", "kms:GenerateDataKey"}, kms); d != "" {
		t.Fatalf("awskms.API actions changed (-policies +code); grant the new ones in aws/iam.tf and here:\n%s", d)
	}
	purpose := "kms:EncryptionContext:" + goConsts(t, "../crypto/envelope", "ctxPurpose")["ctxPurpose"]
	only := func(purposes ...string) string { return "StringEquals " + purpose + "=" + strings.Join(purposes, ",") }

	table, key := "aws_dynamodb_table.runs.arn", "aws_kms_key.config.arn"
	var prefixes []string
	for _, p := range dynamo.KeyPrefixes {
		prefixes = append(prefixes, p+"*")
	}
	leading := "ForAllValues:StringLike dynamodb:LeadingKeys=" + strings.Join(prefixes, ",")
	itemGrant := grant{Actions: items, Resources: []string{table}, Condition: leading}
	indexGrant := grant{Actions: []string{"dynamodb:Query"}, Resources: []string{"${" + table + "}/index/*"}}
	logs := func(fn string) grant {
		return grant{Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"},
			Resources: []string{`${aws_cloudwatch_log_group.fn["` + fn + `"].arn}:*`}}
	}
	launch := grant{Actions: invoke, Resources: []string{"aws_lambda_function.worker.arn"}}
	openAtRest := grant{Actions: []string{"kms:Decrypt"}, Resources: []string{key}, Condition: only(envelope.PurposeAtRest)}

	want := map[string]map[string]grant{
		"worker": {
			"ControlPlaneItems":    itemGrant,
			"OpenInvocationConfig": {Actions: []string{"kms:Decrypt"}, Resources: []string{key}, Condition: only(envelope.PurposeInvocation)},
			"SealStepResults":      {Actions: []string{"kms:GenerateDataKey"}, Resources: []string{key}, Condition: only(envelope.PurposeStep)},
			"OpenStepResults":      {Actions: []string{"kms:Decrypt"}, Resources: []string{key}, Condition: only(envelope.PurposeStep)},
			"SealPayloads":         {Actions: []string{"kms:GenerateDataKey"}, Resources: []string{key}, Condition: only(envelope.PurposePayload)},
			"OpenPayloads":         {Actions: []string{"kms:Decrypt"}, Resources: []string{key}, Condition: only(envelope.PurposePayload)},
			// Lambda sends a failed async invocation to the destination with
			// the worker's role.
			"OnFailureDestination": {Actions: invoke, Resources: []string{"aws_lambda_function.reconciler.arn"}},
			"Logs":                 logs("worker"),
		},
		"reconciler": {
			"ControlPlaneItems":    itemGrant,
			"ControlPlaneIndexes":  indexGrant,
			"SealInvocationConfig": {Actions: []string{"kms:GenerateDataKey"}, Resources: []string{key}, Condition: only(envelope.PurposeInvocation)},
			"OpenConfigAtRest":     openAtRest,
			"LaunchAttempts":       launch,
			"Logs":                 logs("reconciler"),
		},
		"trigger": {
			"ControlPlaneItems":   itemGrant,
			"ControlPlaneIndexes": indexGrant,
			"SealConfig":          {Actions: []string{"kms:GenerateDataKey"}, Resources: []string{key}, Condition: only(envelope.PurposeAtRest, envelope.PurposeInvocation)},
			"OpenConfigAtRest":    openAtRest,
			"LaunchAttempts":      launch,
			// The SQS event source mapping polls with the function's role.
			"PollTriggerQueue": {Actions: []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
				Resources: []string{"aws_sqs_queue.trigger.arn"}},
			"Logs": logs("trigger"),
		},
	}
	for role, w := range want {
		checkPolicy(t, m, role, w)
		checkAttached(t, m, role, "aws_iam_role."+role+".id")
		fn := m.block(t, "resource", "aws_lambda_function", role)
		if got, want := m.str(fn, "role"), "aws_iam_role."+role+".arn"; got != want {
			t.Errorf("aws_lambda_function.%s.role = %s, want %s", role, got, want)
		}
	}
	// A sortie serve host off Lambda makes the engine's calls: the
	// trigger function's but for its SQS queue and logs.
	// It also opens the deployment's page-token key and reads the table's
	// stream (dynamostream) to wake its followers.
	host := maps.Clone(want["trigger"])
	delete(host, "PollTriggerQueue")
	delete(host, "Logs")
	host["SealPayloads"], host["OpenPayloads"] = want["worker"]["SealPayloads"], want["worker"]["OpenPayloads"]
	host["OpenPageTokenKey"] = grant{Actions: []string{"kms:Decrypt"}, Resources: []string{key}, Condition: only(awshost.PageTokenPurpose)}
	host["ReadStream"] = grant{Actions: append(apiActions[dynamostream.API]("dynamodb", nil), apiActions[dynamostream.TableAPI]("dynamodb", nil)...),
		Resources: []string{table, "${" + table + "}/stream/*"}}
	slices.Sort(host["ReadStream"].Actions)
	checkPolicy(t, m, "host", host)
	checkAttached(t, m, "host", "aws_iam_role.host[each.key].id")
	// The Cloud Run worker reports to the table, and opens configuration
	// with Cloud KMS, not AWS KMS.
	checkPolicy(t, m, "cloudrun_worker", map[string]grant{"ControlPlaneItems": itemGrant})
	checkAttached(t, m, "cloudrun_worker", "aws_iam_role.cloudrun_worker[0].id")
	if got := m.ofType("resource", "aws_iam_role_policy_attachment"); len(got) != 0 {
		t.Errorf("managed policy attachments %v: every grant must be in the checked documents", got)
	}
}
