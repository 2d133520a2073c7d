package jsonbody

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sortie-run/sortie"
)

// The depth error names the limit it enforces (MaxDepth, 1024) and the
// values' limit (sortie.MaxJSONDepth, 256) each with its own number; a
// body at MaxDepth passes.
func TestCheckShapeDepthNamesBothLimits(t *testing.T) {
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if err := CheckShape(deep(MaxDepth)); err != nil {
		t.Errorf("CheckShape(%d levels) = %v, want nil", MaxDepth, err)
	}
	err := CheckShape(deep(MaxDepth + 1))
	var ve *sortie.ValidationError
	want := fmt.Sprintf("at most %d levels (jsonbody.MaxDepth), and each value in it at most sortie.MaxJSONDepth (%d)", MaxDepth, sortie.MaxJSONDepth)
	if !errors.As(err, &ve) || ve.Field != "body" || !strings.Contains(ve.Reason, fmt.Sprintf("nested %d levels deep", MaxDepth+1)) || !strings.Contains(ve.Reason, want) {
		t.Errorf("CheckShape(%d levels) = %v, want body refused saying %q", MaxDepth+1, err, want)
	}
}
