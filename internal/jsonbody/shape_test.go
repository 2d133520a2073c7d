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

// A body that is not valid UTF-8 is refused naming the first bad byte
// (a lone continuation byte, a truncated sequence, an encoded surrogate);
// valid multi-byte text passes.
func TestCheckShapeRefusesInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		body string
		at   int
	}{
		{"{\"a\":\"\xff\"}", 6},
		{"{\"a\":\"caf\xc3\"}", 9},
		{"{\"é\":\"\xed\xa0\x80\"}", 7},
	} {
		err := CheckShape([]byte(tc.body))
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "body" || !strings.Contains(ve.Reason, fmt.Sprintf("not valid UTF-8 at byte %d", tc.at)) {
			t.Errorf("CheckShape(%q) = %v, want body refused at byte %d", tc.body, err, tc.at)
		}
	}
	if err := CheckShape([]byte(`{"é":"naïve 😀"}`)); err != nil {
		t.Errorf("CheckShape(valid UTF-8) = %v, want nil", err)
	}
}
