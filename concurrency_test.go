package sortie_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
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
