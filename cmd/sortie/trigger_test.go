package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/functions/triggers"
)

const (
	exampleRules  = "examples/triggers/rules.json"
	exampleEvents = "examples/triggers/events/"
)

// trigger replays an example event with --json and returns its report.
func (c *cli) trigger(event string, wantCode int) triggers.Report {
	c.t.Helper()
	r := c.run("trigger", "--rules", exampleRules, "--event", exampleEvents+event, "--json")
	var rep triggers.Report
	if r.code != wantCode || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		c.t.Fatalf("sortie trigger --event %s: exit %d, stdout %q, stderr %q; want exit %d and a JSON report", event, r.code, r.stdout, r.stderr, wantCode)
	}
	return rep
}

// result waits for run id to complete and compares its result with want.
func (c *cli) result(id sortie.RunID, want string) {
	c.t.Helper()
	var run *sortie.Run
	waitFor(c.t, "run "+string(id)+" completed", waitLong, func() bool { run = c.get(id); return run.State.Terminal() })
	var got, w any
	_ = json.Unmarshal(run.Result, &got)
	_ = json.Unmarshal([]byte(want), &w)
	if run.State != sortie.StateCompleted || cmp.Diff(w, got) != "" {
		c.t.Errorf("run %s = %s %s, want completed with %s", id, run.State, run.Result, want)
	}
}

func (c *cli) runCount() int {
	c.t.Helper()
	if _, err := os.Stat(filepath.Join(c.state, "sortie.db")); errors.Is(err, fs.ErrNotExist) {
		return 0 // no state was ever made: no run stored
	}
	r := c.run("list", "--json")
	if r.code != 0 {
		c.t.Fatalf("sortie list --json: exit %d: %s", r.code, r.stderr)
	}
	var page sortie.RunPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		c.t.Fatalf("sortie list --json = %q: %v", r.stdout, err)
	}
	return len(page.Runs)
}

// Replaying an event starts the runs its rules name; replaying it again
// starts none.
func TestTriggerReplaysEventsOnce(t *testing.T) {
	c := newCLI(t)
	first := c.trigger("s3-object-created.json", 0)
	if len(first.Outcomes) != 2 || first.Outcomes[0].Rule != "s3-uploads" || first.Outcomes[1].Rule != "s3-audit" {
		t.Fatalf("trigger s3 event = %+v, want runs of s3-uploads and s3-audit", first.Outcomes)
	}
	c.result(first.Outcomes[0].RunID, `{"bucket":"sourcebucket","key":"Happy Face.jpg","size":1024}`)
	again := c.trigger("s3-object-created.json", 0)
	for i := range first.Outcomes {
		if first.Outcomes[i].Result != triggers.Started {
			t.Errorf("first replay outcome %d = %+v, want started", i, first.Outcomes[i])
		}
		first.Outcomes[i].Result = triggers.Existed
	}
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("trigger s3 event twice: want the same runs, existed (-first +again):\n%s", d)
	}
	if n := c.runCount(); n != 2 {
		t.Errorf("two replays started %d runs, want 2", n)
	}
	ce := c.trigger("pubsub-message-published.json", 0)
	if len(ce.Outcomes) != 1 || ce.Outcomes[0].RunID == "" {
		t.Fatalf("trigger pubsub CloudEvent = %+v, want one run", ce.Outcomes)
	}
	c.result(ce.Outcomes[0].RunID, `{"message":{"order":"P-7"},"origin":"checkout"}`)
}

// An SQS batch with a record whose body the rule cannot template starts
// the other records' runs, reports that record rejected and exits 2 (a
// replay cannot help).
func TestTriggerSQSBatchWithRejectedRecord(t *testing.T) {
	c := newCLI(t)
	rep := c.trigger("sqs-batch.json", 2)
	got := map[triggers.Result][]string{}
	for _, o := range rep.Outcomes {
		got[o.Result] = append(got[o.Result], o.EventID)
	}
	want := map[triggers.Result][]string{triggers.Started: {"9b7e1a52-0001", "9b7e1a52-0003"}, triggers.Rejected: {"9b7e1a52-0002"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
}

// Each outcome is one line of its own, in text and in --json, and the
// exit summary does not repeat the reasons.
func TestTriggerPrintsEachOutcomeOnce(t *testing.T) {
	c := newCLI(t)
	first := c.run("trigger", "--rules", exampleRules, "--event", exampleEvents+"sqs-batch.json")
	again := c.run("trigger", "--rules", exampleRules, "--event", exampleEvents+"sqs-batch.json")
	test := c.run("trigger", "--rules", exampleRules, "--event", exampleEvents+"s3-test-event.json")
	for _, tc := range []struct {
		name string
		r    result
		code int
		want []string
	}{
		{"first", first, 2, []string{`^started run [0-9A-Z]{26} \(rule sqs-orders, agent probe\) for sqs event 9b7e1a52-0001$`,
			`^rejected sqs event 9b7e1a52-0002 \(rule sqs-orders, agent probe\): .*body.order: body is a string, not an object$`,
			`^started run [0-9A-Z]{26} \(rule sqs-orders, agent probe\) for sqs event 9b7e1a52-0003$`}},
		{"again", again, 2, []string{`^existed run [0-9A-Z]{26} \(rule sqs-orders, agent probe\) for sqs event 9b7e1a52-0001: started by an earlier delivery`,
			`^rejected sqs event 9b7e1a52-0002 `, `^existed run [0-9A-Z]{26} .* 9b7e1a52-0003: `}},
		{"s3:TestEvent", test, 0, []string{`^ignored s3 event: s3:TestEvent: `}},
	} {
		lines := strings.Split(strings.TrimSpace(tc.r.stdout), "\n")
		if tc.r.code != tc.code || len(lines) != len(tc.want) {
			t.Errorf("%s: exit %d, stdout %q; want exit %d and %d lines", tc.name, tc.r.code, tc.r.stdout, tc.code, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !regexp.MustCompile(w).MatchString(lines[i]) {
				t.Errorf("%s: line %d = %q, want it to match %s", tc.name, i+1, lines[i], w)
			}
		}
		if strings.Contains(tc.r.stderr, "body is a string") {
			t.Errorf("%s: stderr %q repeats the reason printed on stdout", tc.name, tc.r.stderr)
		}
	}
	if !strings.Contains(first.stderr, "1 rejected") || strings.Count(first.stderr, "\n") != 1 {
		t.Errorf("stderr = %q, want one summary line", first.stderr)
	}
}

func TestTriggerUnmatchedEventSaysWhy(t *testing.T) {
	c := newCLI(t)
	r := c.run("trigger", "--rules", exampleRules, "--event", "functions/triggers/testdata/aws/autoscaling-event-launch-successful.json")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "unmatched eventbridge event") || strings.Count(r.stdout, "\n") != 1 ||
		!strings.Contains(r.stdout, "no rule matched, nothing started") || !strings.Contains(r.stdout, `ecr-push: source "aws.autoscaling" does not match "aws.ecr"`) {
		t.Errorf("sortie trigger (unmatched): exit %d, stdout %q; want exit 0 and each rule's reason", r.code, r.stdout)
	}
	if n := c.runCount(); n != 0 {
		t.Errorf("an unmatched event started %d runs, want none", n)
	}
}

func TestTriggerRefusesInvalidInput(t *testing.T) {
	c := newCLI(t)
	badRules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(badRules, []byte(`{"version":"sortie.triggers/v1","rules":[{"name":"x","match":{"kind":"s3","typ":"a"},"agent":"probe"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := os.ReadFile(filepath.Join("..", "..", exampleEvents, "s3-object-created.json"))
	if err != nil {
		t.Fatal(err)
	}
	twice := filepath.Join(t.TempDir(), "twice.json")
	if err := os.WriteFile(twice, append([]byte(`{"Records":[],`), bytes.TrimPrefix(bytes.TrimSpace(s3), []byte("{"))...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rules", exampleRules, "--event", twice}, `duplicate object key "Records"`},
		{[]string{"--rules", exampleRules, "--event", "go.mod"}, "--event go.mod"},
		{[]string{"--rules", exampleRules, "--event", "examples/triggers/README.md"}, "--event"},
		{[]string{"--rules", exampleRules}, "--event"},
		{[]string{"--event", exampleEvents + "s3-object-created.json"}, "--rules"},
		{[]string{"--rules", badRules, "--event", exampleEvents + "s3-object-created.json"}, `rules[0]: rule "x": json: unknown field "typ"`},
	} {
		r := c.run(append([]string{"trigger"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sortie trigger %v: exit %d, stderr %q; want exit 2 saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if n := c.runCount(); n != 0 {
		t.Errorf("refused triggers started %d runs, want none", n)
	}
}
