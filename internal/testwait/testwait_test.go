package testwait

import (
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	Until(t, "three checks", time.Minute, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("Until checked its condition %d times, want 3", n)
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestUntilFailsAfterTheTimeout(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != rec {
				panic(r)
			}
		}()
		Until(rec, "never", 30*time.Millisecond, func() bool { return false })
	}()
	if rec.msg == "" {
		t.Error("Until(never true) returned without failing the test")
	}
}
