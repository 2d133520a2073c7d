package terraform

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	lambdafn "github.com/sortie-run/sortie/functions/lambda"
	"github.com/sortie-run/sortie/functions/triggers"
)

// TestAWSFunctionEnvironment checks every variable the module sets on a
// function is one functions/lambda reads (its Env* constants, parsed from
// the source so a new one is seen), and the ones its mode requires are set.
func TestAWSFunctionEnvironment(t *testing.T) {
	m := parseModule(t, "aws")
	reads := map[string]bool{}
	for _, dir := range []string{"../functions/lambda", "../destination"} {
		for _, v := range goConsts(t, dir, "Env") {
			reads[v] = true
		}
	}
	required := map[string][]string{
		lambdafn.ModeWorker:     {lambdafn.EnvMode, lambdafn.EnvTable, lambdafn.EnvKMSKeys},
		lambdafn.ModeReconciler: {lambdafn.EnvMode, lambdafn.EnvTable, lambdafn.EnvKMSKeys, lambdafn.EnvWorkerFunction},
		lambdafn.ModeTrigger:    {lambdafn.EnvMode, lambdafn.EnvTable, lambdafn.EnvKMSKeys, lambdafn.EnvWorkerFunction, lambdafn.EnvTriggerRules},
	}
	names := m.ofType("resource", "aws_lambda_function")
	slices.Sort(names)
	if d := cmp.Diff([]string{"reconciler", "trigger", "worker"}, names); d != "" {
		t.Fatalf("aws_lambda_function resources (-want +got):\n%s", d)
	}
	for _, name := range names {
		fn := m.block(t, "resource", "aws_lambda_function", name)
		env := map[string]string{}
		m.envMap(t, child(t, fn, "environment").Attributes["variables"].Expr, env)
		for k := range env {
			if !reads[k] {
				t.Errorf("aws_lambda_function.%s sets %s, which functions/lambda does not read", name, k)
			}
		}
		if got := env[lambdafn.EnvMode]; got != name {
			t.Errorf("aws_lambda_function.%s: %s = %q, want %q", name, lambdafn.EnvMode, got, name)
		}
		for _, k := range required[name] {
			if env[k] == "" {
				t.Errorf("aws_lambda_function.%s does not set %s, which %s mode needs", name, k, name)
			}
		}
		if got := env[lambdafn.EnvWorkerFunction]; got != "" && got != "aws_lambda_function.worker.arn" {
			t.Errorf("aws_lambda_function.%s: %s = %s, want aws_lambda_function.worker.arn", name, lambdafn.EnvWorkerFunction, got)
		}
		want := map[string]string{"runtime": "provided.al2023", "handler": "bootstrap", "architectures": "[var.architecture]"}
		for attr, w := range want {
			if got := m.str(fn, attr); got != w {
				t.Errorf("aws_lambda_function.%s.%s = %s, want %s", name, attr, got, w)
			}
		}
	}
}

// TestAWSDelivery checks the delivery settings the code relies on: Lambda
// never retries an attempt (Sortie owns retries) and failures reach the
// reconciler; SQS batches report partial failures (functions/triggers
// answers batchItemFailures) and poison messages go to a dead-letter queue.
func TestAWSDelivery(t *testing.T) {
	m := parseModule(t, "aws")
	cfg := m.block(t, "resource", "aws_lambda_function_event_invoke_config", "worker")
	got := map[string]string{
		"function_name":          m.str(cfg, "function_name"),
		"maximum_retry_attempts": m.str(cfg, "maximum_retry_attempts"),
		"on_failure":             m.str(child(t, child(t, cfg, "destination_config"), "on_failure"), "destination"),
	}
	want := map[string]string{
		"function_name":          "aws_lambda_function.worker.function_name",
		"maximum_retry_attempts": "0",
		"on_failure":             "aws_lambda_function.reconciler.arn",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("aws_lambda_function_event_invoke_config.worker (-want +module):\n%s", d)
	}
	if _, ok := cfg.Attributes["maximum_event_age_in_seconds"]; !ok {
		t.Errorf("aws_lambda_function_event_invoke_config.worker sets no maximum_event_age_in_seconds")
	}

	esm := m.block(t, "resource", "aws_lambda_event_source_mapping", "trigger_queue")
	if d := cmp.Diff([]string{"ReportBatchItemFailures"}, m.strs(esm, "function_response_types")); d != "" {
		t.Errorf("aws_lambda_event_source_mapping.trigger_queue.function_response_types (-want +module):\n%s", d)
	}
	if got := m.str(esm, "function_name"); got != "aws_lambda_function.trigger.arn" {
		t.Errorf("aws_lambda_event_source_mapping.trigger_queue.function_name = %s, want aws_lambda_function.trigger.arn", got)
	}
	q := m.block(t, "resource", "aws_sqs_queue", "trigger")
	if got := m.str(q, "redrive_policy"); !strings.Contains(got, "aws_sqs_queue.trigger_dlq.arn") {
		t.Errorf("aws_sqs_queue.trigger.redrive_policy = %s, want the dead-letter queue aws_sqs_queue.trigger_dlq", got)
	}

	target := m.block(t, "resource", "aws_cloudwatch_event_target", "reconcile")
	if got := m.str(target, "arn"); got != "aws_lambda_function.reconciler.arn" {
		t.Errorf("aws_cloudwatch_event_target.reconcile.arn = %s, want the reconciler", got)
	}
	for _, name := range []string{"worker", "reconciler", "trigger"} {
		lc := child(t, m.block(t, "resource", "aws_lambda_function", name), "logging_config")
		if got, want := m.str(lc, "log_group"), `aws_cloudwatch_log_group.fn["`+name+`"].name`; got != want {
			t.Errorf("aws_lambda_function.%s logs to %s, want %s (the group with retention)", name, got, want)
		}
	}
	lg := m.block(t, "resource", "aws_cloudwatch_log_group", "fn")
	if got := m.str(lg, "retention_in_days"); got != "var.log_retention_days" {
		t.Errorf("aws_cloudwatch_log_group.fn.retention_in_days = %s, want var.log_retention_days", got)
	}
	key := m.block(t, "resource", "aws_kms_key", "config")
	if got := m.str(key, "enable_key_rotation"); got != "true" {
		t.Errorf("aws_kms_key.config.enable_key_rotation = %s, want true", got)
	}
	m.block(t, "resource", "aws_kms_alias", "config")
}

// TestAWSExampleRules checks the example's rules file is one the trigger
// function loads, and that the rule for its queue matches the queue name
// the example's module creates.
func TestAWSExampleRules(t *testing.T) {
	rules, err := triggers.LoadRules("aws/examples/basic/rules.json")
	if err != nil {
		t.Fatalf("LoadRules(aws/examples/basic/rules.json) = %v, want nil", err)
	}
	if got := rules.Len(); got != 2 {
		t.Errorf("rules.Len() = %d, want 2", got)
	}
	main, err := os.ReadFile("aws/examples/basic/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	rulesSrc, err := os.ReadFile("aws/examples/basic/rules.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), `name                  = "sortie-example"`) || !strings.Contains(string(rulesSrc), ":sortie-example-trigger") {
		t.Errorf("the example's module name and the SQS rule's queue (NAME-trigger) disagree")
	}
}

// TestAWSConcurrencyAndQueue checks the windows between Lambda and the
// engine: every function has reserved concurrency from a variable with a
// default (a burst of workers cannot throttle the reconciler and trigger
// functions, the recovery path), and the functions that launch attempts
// know the worker's maximum event age, which the engine adds to a run's
// start timeout.
func TestAWSConcurrencyAndQueue(t *testing.T) {
	m := parseModule(t, "aws")
	for _, name := range []string{"worker", "reconciler", "trigger"} {
		fn := m.block(t, "resource", "aws_lambda_function", name)
		v := name + "_reserved_concurrency"
		if got := m.str(fn, "reserved_concurrent_executions"); got != "var."+v {
			t.Errorf("aws_lambda_function.%s.reserved_concurrent_executions = %q, want var.%s", name, got, v)
		}
		if def := m.str(m.variable(t, v), "default"); def == "" || def == "null" || def == "-1" {
			t.Errorf("variable %s default = %q, want a reservation", v, def)
		}
		if name == "worker" {
			continue
		}
		env := map[string]string{}
		m.envMap(t, child(t, fn, "environment").Attributes["variables"].Expr, env)
		if got := env[lambdafn.EnvWorkerMaxEventAge]; got != "tostring(var.worker_max_event_age_s)" {
			t.Errorf("aws_lambda_function.%s: %s = %q, want tostring(var.worker_max_event_age_s), the age the worker's event invoke config sets", name, lambdafn.EnvWorkerMaxEventAge, got)
		}
	}
	cfg := m.block(t, "resource", "aws_lambda_function_event_invoke_config", "worker")
	if got := m.str(cfg, "maximum_event_age_in_seconds"); got != "var.worker_max_event_age_s" {
		t.Errorf("aws_lambda_function_event_invoke_config.worker.maximum_event_age_in_seconds = %q, want var.worker_max_event_age_s", got)
	}
}
