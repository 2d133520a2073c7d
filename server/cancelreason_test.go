package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/wire"
)

// The cancel schema's reason limit is sortie.MaxCancelReasonBytes, and
// one rule holds over HTTP and embedded: a reason of the limit is stored,
// one byte more is refused naming reason and the limit (in bytes, so a
// reason of 1024 two-byte characters, which the schema's maxLength of
// characters lets through, is refused by the engine).
func TestCancelReasonLimit(t *testing.T) {
	b, err := os.ReadFile("schemas/cancel.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Reason struct {
				MaxLength int `json:"maxLength"`
			} `json:"reason"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil || schema.Properties.Reason.MaxLength != sortie.MaxCancelReasonBytes {
		t.Fatalf("schemas/cancel.json reason maxLength = %d (%v), want sortie.MaxCancelReasonBytes %d",
			schema.Properties.Reason.MaxLength, err, sortie.MaxCancelReasonBytes)
	}
	r := newRig(t, nil)
	ctx := context.Background()
	run := r.submit(t, `{"until_cancelled":true}`)
	for name, reason := range map[string]string{
		"ascii":    strings.Repeat("r", sortie.MaxCancelReasonBytes+1),
		"two-byte": strings.Repeat("é", sortie.MaxCancelReasonBytes),
	} {
		for via, c := range map[string]*sortie.Client{"HTTP": r.client, "embedded": sortie.NewClient(r.engine, nil)} {
			var ve *sortie.ValidationError
			if _, err := c.Cancel(ctx, run.ID, reason); !errors.As(err, &ve) || ve.Field != "reason" || !strings.Contains(strings.ReplaceAll(err.Error(), ",", ""), "1024") {
				t.Errorf("%s: Cancel(%s reason of %d bytes) = %v, want a ValidationError naming reason and the limit 1024", via, name, len(reason), err)
			}
		}
	}
	var eb wire.ErrorBody
	if code := post(t, r, "/v1/runs/"+run.ID.String()+"/cancel", `{"reason":"`+strings.Repeat("r", sortie.MaxCancelReasonBytes+1)+`"}`, nil, &eb); code != http.StatusBadRequest || eb.Error.Field != "reason" {
		t.Errorf("POST cancel with a reason over the limit = %d %+v, want 400 naming reason", code, eb)
	}
	reason := strings.Repeat("r", sortie.MaxCancelReasonBytes)
	got, err := r.client.Cancel(ctx, run.ID, reason)
	if err != nil {
		t.Fatalf("Cancel with a reason of the limit = %v, want it taken", err)
	}
	if got.Reason != reason {
		t.Errorf("Cancel with a reason of the limit stored a reason of %d bytes, want %d", len(got.Reason), len(reason))
	}
}
