package sortie_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane/memory"
)

func TestConcurrencyRunKey(t *testing.T) {
	vars := json.RawMessage(`{"customer":"acme","tier":2,"eu":true,"org":{"id":"o-1"},"tags":["a"],"none":null}`)
	for _, tc := range []struct {
		key, want, err string
	}{
		{"", "report", ""},
		{"{{.customer}}", "report/acme", ""},
		{"c-{{ .customer }}/t{{.tier}}/{{.eu}}", "report/c-acme/t2/true", ""},
		{"{{.org.id}}", "report/o-1", ""},
		{"{{.missing}}", "", `no variable "missing"`},
		{"{{.customer.id}}", "", "not inside an object"},
		{"{{.tags}}", "", "a list, want a string"},
		{"{{.none}}", "", "a null, want a string"},
		{"{{.org}}", "", "an object, want a string"},
	} {
		c := &sortie.Concurrency{Limit: 1, Key: tc.key}
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate(%q) = %v", tc.key, err)
		}
		got, err := c.RunKey("report", vars)
		var ve *sortie.ValidationError
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("RunKey(%q) = %q, %v; want %q", tc.key, got, err, tc.want)
		case tc.err != "" && (!errors.As(err, &ve) || ve.Field != "variables" || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("RunKey(%q) = %q, %v; want a validation error of variables saying %q", tc.key, got, err, tc.err)
		}
	}
}

func TestConcurrencyKeyTemplateIsRestrictedToReferences(t *testing.T) {
	for _, key := range []string{"{{.a", "a}}", "{{printf \"%s\" .a}}", "{{.a | html}}", "{{$x := 1}}", "{{customer}}", "{{.}}", "{{.a..b}}"} {
		c := &sortie.Concurrency{Limit: 1, Key: key}
		var ve *sortie.ValidationError
		if err := c.Validate(); !errors.As(err, &ve) || ve.Field != "agent.concurrency.key" {
			t.Errorf("Validate(key %q) = %v, want a validation error of agent.concurrency.key", key, err)
		}
	}
}

func FuzzConcurrencyRunKey(f *testing.F) {
	f.Add("{{.customer}}-{{.org.id}}", `{"customer":"acme","org":{"id":1}}`)
	f.Add("{{", `{}`)
	f.Fuzz(func(t *testing.T, key, vars string) {
		c := &sortie.Concurrency{Limit: 1, Key: key}
		if c.Validate() != nil {
			return
		}
		got, err := c.RunKey("a", json.RawMessage(vars))
		if err == nil && (!strings.HasPrefix(got, "a") || len(got) > len("a/")+sortie.MaxConcurrencyKeyBytes) {
			t.Errorf("RunKey(%q, %q) = %q", key, vars, got)
		}
	})
}

// An agent limited to one run per customer: the second run of a customer
// waits queued at position 1 while another customer's run starts; a raised
// limit in the engine's catalog (no restart) admits it at the next
// admission; a template naming a missing variable is refused at submit.
func TestConcurrencyKeyPerCustomer(t *testing.T) {
	agents := sortie.Agents{}
	m := sortie.Manifest{Name: "report", Runtime: "go:probe", Concurrency: &sortie.Concurrency{Limit: 1, Key: "{{.customer}}"}}
	if err := agents.Add(m); err != nil {
		t.Fatal(err)
	}
	cp := memory.New()
	e := sortie.NewEngine(cp, &stubLauncher{}, agents, nil)
	defer e.Close()
	ctx := context.Background()
	submit := func(vars string) *sortie.Run {
		t.Helper()
		run, err := e.Submit(ctx, &sortie.SubmitRequest{Agent: "report", Variables: json.RawMessage(vars)})
		if err != nil {
			t.Fatalf("Submit(%s) = %v", vars, err)
		}
		return run
	}
	a1, a2, b1 := submit(`{"customer":"acme"}`), submit(`{"customer":"acme"}`), submit(`{"customer":"bolt"}`)
	if a1.Attempt != 1 || b1.Attempt != 1 {
		t.Errorf("first runs of acme and bolt: attempts %d and %d, want both launched", a1.Attempt, b1.Attempt)
	}
	got, err := e.Get(ctx, a2.ID)
	if err != nil || got.Attempt != 0 || got.Queue == nil || got.Queue.Position != 1 || got.Queue.Key != "report/acme" {
		t.Fatalf("Get(second acme run) = attempt %d queue %+v, %v; want queued at position 1 of report/acme", got.Attempt, got.Queue, err)
	}
	m.Concurrency = &sortie.Concurrency{Limit: 2, Key: m.Concurrency.Key}
	agents["report"] = m
	if n, err := e.AdmitQueued(ctx); err != nil || n != 1 {
		t.Errorf("AdmitQueued after the limit was raised to 2 = %d, %v; want 1 admitted", n, err)
	}
	if got, _ := e.Get(ctx, a2.ID); got.Attempt != 1 || got.Queue != nil {
		t.Errorf("second acme run after the raise: attempt %d queue %+v, want launched", got.Attempt, got.Queue)
	}
	_, err = e.Submit(ctx, &sortie.SubmitRequest{Agent: "report", Variables: json.RawMessage(`{"region":"eu"}`)})
	var ve *sortie.ValidationError
	if !errors.As(err, &ve) || ve.Field != "variables" {
		t.Errorf("Submit(without customer) = %v, want a ValidationError of variables", err)
	}
}
