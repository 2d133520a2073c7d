package triggers_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sortie-run/sortie/functions/triggers"
	"github.com/sortie-run/sortie/functions/triggers/internal/rig"
)

type testingT struct{ cleanup []func() }

func (t *testingT) Cleanup(f func()) { t.cleanup = append(t.cleanup, f) }
func (t *testingT) close() {
	for _, f := range t.cleanup {
		f()
	}
}
func (*testingT) Helper()                   {}
func (*testingT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func ExampleRouter_HandleLambda() {
	rules, err := triggers.ParseRules([]byte(`{"version": "sortie.triggers/v1", "rules": [
	  {"name": "ecr-push", "agent": "probe",
	   "match": {"kind": "eventbridge", "source": "aws.ecr", "fields": {"detail.action-type": "PUSH"}},
	   "variables": {"events": 0, "output": {"image": "${detail.repository-name}:${detail.image-tag}"}}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	t := &testingT{}
	defer t.close()
	r := rig.New(t) // an engine; in Lambda, the trigger function's engine
	router := triggers.NewRouter(rules, r.Engine, nil)

	event, _ := os.ReadFile("testdata/aws/ecr-image-push-event.json")
	out, err := router.HandleLambda(context.Background(), event)
	if err != nil {
		fmt.Println(err)
		return
	}
	o := out.(*triggers.Report).Outcomes[0]
	run := r.Wait(t, o.RunID)
	fmt.Println(o.IdempotencyKey)
	fmt.Println(run.State, string(run.Result))
	// Output:
	// trigger/ecr-push/eventbridge:13cde686-328b-6117-af20-0e5566167482
	// completed {"image":"my-repository-name:latest"}
}
