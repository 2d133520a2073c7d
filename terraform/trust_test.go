package terraform

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fncloudrun "github.com/sortie-run/sortie/functions/cloudrun"
)

// trust is a role's trust policy statement, as the test compares it.
type trust struct {
	Action, Principal string   // "sts:AssumeRole", "Service lambda.amazonaws.com"
	Conditions        []string // "test variable=values", sorted
}

// trustOf reads the only statement of data.aws_iam_policy_document.NAME.
func (m *module) trustOf(t *testing.T, name string) trust {
	t.Helper()
	s := child(t, m.block(t, "data", "aws_iam_policy_document", name), "statement")
	p := child(t, s, "principals")
	tr := trust{Action: strings.Join(m.strs(s, "actions"), ","), Principal: m.str(p, "type") + " " + strings.Join(m.strs(p, "identifiers"), ",")}
	for _, c := range children(s, "condition") {
		tr.Conditions = append(tr.Conditions, m.str(c, "test")+" "+m.str(c, "variable")+"="+strings.Join(m.strs(c, "values"), ","))
	}
	sort.Strings(tr.Conditions)
	return tr
}

// Who may assume each role: the functions' roles Lambda; the host's roles
// ECS tasks of this account, or EC2; the Cloud Run worker's role only
// Google-issued ID tokens of that one service account (its unique ID as
// the token's azp and sub) for the audience the container asks for.
func TestAWSRoleTrust(t *testing.T) {
	m := parseModule(t, "aws")
	id, aud := "var.gcp_worker_service_account_id", "var.gcp_token_audience"
	want := map[string]trust{
		"assume_lambda": {Action: "sts:AssumeRole", Principal: "Service lambda.amazonaws.com"},
		"assume_host_ecs": {Action: "sts:AssumeRole", Principal: "Service ecs-tasks.amazonaws.com",
			Conditions: []string{"StringEquals aws:SourceAccount=data.aws_caller_identity.current.account_id"}},
		"assume_host_ec2": {Action: "sts:AssumeRole", Principal: "Service ec2.amazonaws.com"},
		"assume_cloudrun_worker": {Action: "sts:AssumeRoleWithWebIdentity", Principal: "Federated accounts.google.com",
			Conditions: []string{"StringEquals accounts.google.com:aud=" + id, "StringEquals accounts.google.com:oaud=" + aud,
				"StringEquals accounts.google.com:sub=" + id}},
	}
	for name, w := range want {
		if d := cmp.Diff(w, m.trustOf(t, name)); d != "" {
			t.Errorf("data.aws_iam_policy_document.%s (-want +module):\n%s", name, d)
		}
	}
	roles := map[string]string{"worker": "assume_lambda", "reconciler": "assume_lambda", "trigger": "assume_lambda",
		"cloudrun_worker": "assume_cloudrun_worker[0]"}
	for role, doc := range roles {
		if got := m.str(m.block(t, "resource", "aws_iam_role", role), "assume_role_policy"); got != "data.aws_iam_policy_document."+doc+".json" {
			t.Errorf("aws_iam_role.%s.assume_role_policy = %s, want data.aws_iam_policy_document.%s.json", role, got, doc)
		}
	}
	hostTrust := m.str(m.block(t, "resource", "aws_iam_role", "host"), "assume_role_policy")
	if !strings.Contains(hostTrust, "assume_host_ecs.json") || !strings.Contains(hostTrust, "assume_host_ec2.json") {
		t.Errorf("aws_iam_role.host.assume_role_policy = %s, want assume_host_ecs for ecs and assume_host_ec2 for ec2", hostTrust)
	}
	if got := m.str(m.block(t, "resource", "aws_iam_instance_profile", "host"), "role"); got != `aws_iam_role.host["ec2"].name` {
		t.Errorf("aws_iam_instance_profile.host.role = %s, want the ec2 host role", got)
	}
	if got := m.str(m.variable(t, "gcp_token_audience"), "default"); got != fncloudrun.DefaultAWSTokenAudience {
		t.Errorf("variable gcp_token_audience default = %q, want the container's default audience %q", got, fncloudrun.DefaultAWSTokenAudience)
	}
}
