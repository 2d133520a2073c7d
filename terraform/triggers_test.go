package terraform

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
	"github.com/sortie-run/sortie/functions/triggers"
)

// triggerSources maps each principal the module lets invoke the trigger
// function to a sample payload of that source (aws-lambda-go's, in
// functions/triggers/testdata) and the kind the code must detect in it.
var triggerSources = map[string]struct {
	sample string
	kind   triggers.Kind
}{
	"events.amazonaws.com": {"aws/ecr-image-push-event.json", triggers.KindEventBridge},
	"s3.amazonaws.com":     {"aws/s3-event.json", triggers.KindS3},
	"sns.amazonaws.com":    {"aws/sns-event.json", triggers.KindSNS},
}

// TestAWSTriggerSources checks every source wired to the trigger function
// (EventBridge, S3 notifications, SNS subscriptions, the SQS mapping) is
// one whose payloads functions/triggers detects, and the optional S3 and
// SNS wiring: one permission per bucket or topic, scoped to it, created
// before the notification or subscription that needs it.
func TestAWSTriggerSources(t *testing.T) {
	m := parseModule(t, "aws")
	var principals []string
	for _, name := range m.ofType("resource", "aws_lambda_permission") {
		p := m.block(t, "resource", "aws_lambda_permission", name)
		if m.str(p, "function_name") != "aws_lambda_function.trigger.function_name" {
			continue
		}
		principal := m.str(p, "principal")
		principals = append(principals, principal)
		src, ok := triggerSources[principal]
		if !ok {
			t.Errorf("aws_lambda_permission.%s lets %s invoke the trigger function, a source functions/triggers has no sample for; add it to triggerSources", name, principal)
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "functions", "triggers", "testdata", src.sample))
		if err != nil {
			t.Fatal(err)
		}
		if kind, err := triggers.DetectKind(b); kind != src.kind || err != nil {
			t.Errorf("DetectKind(%s, a %s payload) = %q, %v; want %q", src.sample, principal, kind, err, src.kind)
		}
		if m.str(p, "source_arn") == "" {
			t.Errorf("aws_lambda_permission.%s has no source_arn: any %s resource could invoke the function", name, principal)
		}
	}
	slices.Sort(principals)
	if d := cmp.Diff([]string{"events.amazonaws.com", "s3.amazonaws.com", "sns.amazonaws.com"}, principals); d != "" {
		t.Errorf("principals allowed to invoke the trigger function (-want +module):\n%s", d)
	}
	if kind, err := triggers.DetectKind(mustRead(t, "../functions/triggers/testdata/aws/sqs-event.json")); kind != triggers.KindSQS || err != nil {
		t.Errorf("DetectKind(sqs-event.json) = %q, %v; want sqs (the trigger queue's mapping)", kind, err)
	}

	checkAttrs(t, m, "aws_lambda_permission", "trigger_s3", map[string]string{
		"for_each": "var.trigger_s3_notifications", "principal": "s3.amazonaws.com",
		"source_arn": "arn:${data.aws_partition.current.partition}:s3:::${each.key}", "source_account": "data.aws_caller_identity.current.account_id"})
	checkAttrs(t, m, "aws_s3_bucket_notification", "trigger", map[string]string{
		"for_each": "var.trigger_s3_notifications", "bucket": "each.key", "depends_on": "[aws_lambda_permission.trigger_s3]"})
	fn := child(t, m.block(t, "resource", "aws_s3_bucket_notification", "trigger"), "lambda_function")
	if got := m.str(fn, "lambda_function_arn"); got != "aws_lambda_function.trigger.arn" {
		t.Errorf("aws_s3_bucket_notification.trigger notifies %s, want aws_lambda_function.trigger.arn", got)
	}
	checkAttrs(t, m, "aws_lambda_permission", "trigger_sns", map[string]string{
		"for_each": "toset(var.trigger_sns_topics)", "principal": "sns.amazonaws.com", "source_arn": "each.value"})
	checkAttrs(t, m, "aws_sns_topic_subscription", "trigger", map[string]string{
		"for_each": "toset(var.trigger_sns_topics)", "topic_arn": "each.value", "protocol": "lambda",
		"endpoint": "aws_lambda_function.trigger.arn", "depends_on": "[aws_lambda_permission.trigger_sns]"})
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAttrs compares attributes of resource typ.name with want (literal
// strings or source text).
func checkAttrs(t *testing.T, m *module, typ, name string, want map[string]string) {
	t.Helper()
	b := m.block(t, "resource", typ, name)
	got := map[string]string{}
	for k := range want {
		got[k] = m.str(b, k)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("resource %s.%s (-want +module):\n%s", typ, name, d)
	}
}

// TestVariablesAreDocumented: every variable of both modules says what it
// is.
func TestVariablesAreDocumented(t *testing.T) {
	for _, dir := range []string{"aws", "gcp"} {
		m := parseModule(t, dir)
		for _, b := range m.blocks {
			if b.Type == "variable" && strings.TrimSpace(m.str(b.Body, "description")) == "" {
				t.Errorf("%s: variable %q has no description", dir, b.Labels[0])
			}
		}
	}
}

// TestGCPStorageTriggerWiring checks what a Cloud Storage Eventarc trigger
// needs: the Cloud Storage service agent may publish to Pub/Sub before the
// trigger is created, and the trigger delivers to the path the service
// serves CloudEvents on.
func TestGCPStorageTriggerWiring(t *testing.T) {
	m := parseModule(t, "gcp")
	pub := m.block(t, "resource", "google_project_iam_member", "storage_pubsub_publisher")
	got := map[string]string{"role": m.str(pub, "role"), "member": m.str(pub, "member"), "count": m.str(pub, "count")}
	want := map[string]string{"role": "roles/pubsub.publisher", "count": "local.storage_trigger ? 1 : 0",
		"member": "serviceAccount:${data.google_storage_project_service_account.gcs[0].email_address}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("google_project_iam_member.storage_pubsub_publisher (-want +module):\n%s", d)
	}
	if got := m.text(m.local("storage_trigger")); !strings.Contains(got, `startswith(var.eventarc.event_type, "google.cloud.storage.")`) {
		t.Errorf("local.storage_trigger = %s, want it true for google.cloud.storage.* event types", got)
	}
	trig := m.block(t, "resource", "google_eventarc_trigger", "events")
	if deps := m.strs(trig, "depends_on"); !slices.Contains(deps, "google_project_iam_member.storage_pubsub_publisher") {
		t.Errorf("google_eventarc_trigger.events depends on %v, want the storage service agent's publisher role first", deps)
	}
	for _, b := range m.blocks {
		if b.Type == "variable" && b.Labels[0] == "eventarc" {
			if typ := m.text(b.Body.Attributes["type"].Expr); !strings.Contains(typ, `optional(string, "`+fncloudrun.EventsPath+`")`) {
				t.Errorf("variable eventarc's path defaults otherwise than %s, where cmd/sortie-cloudrun serves CloudEvents: %s", fncloudrun.EventsPath, typ)
			}
		}
	}
}

// TestAWSTriggerQueueKind: the trigger queue and its dead-letter queue
// are of one kind, the one variable trigger_queue_fifo names (a FIFO
// queue's name must end in .fifo, and its dead-letter queue must be FIFO
// too), and the module says which in an output.
func TestAWSTriggerQueueKind(t *testing.T) {
	m := parseModule(t, "aws")
	for name, base := range map[string]string{"trigger": "${var.name}-trigger", "trigger_dlq": "${var.name}-trigger-dlq"} {
		checkAttrs(t, m, "aws_sqs_queue", name, map[string]string{"name": base + "${local.trigger_queue_suffix}",
			"fifo_queue": "var.trigger_queue_fifo", "content_based_deduplication": "var.trigger_queue_fifo"})
	}
	if got := m.text(m.local("trigger_queue_suffix")); got != `var.trigger_queue_fifo ? ".fifo" : ""` {
		t.Errorf("local.trigger_queue_suffix = %s, want .fifo exactly for FIFO queues", got)
	}
	var kind string
	for _, b := range m.blocks {
		if b.Type == "output" && b.Labels[0] == "trigger_queue_kind" {
			kind = m.str(b.Body, "value")
		}
	}
	if kind != `aws_sqs_queue.trigger.fifo_queue ? "fifo" : "standard"` {
		t.Errorf("output trigger_queue_kind = %q, want fifo or standard from the queue", kind)
	}
}
