package local

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	// Fields 3..52 of a zombie whose command name holds ") (" and spaces;
	// field 52 is the wait status 0x6100 (exit code 97).
	tail := []string{"Z", "1", "4242", "4242"}
	for i := 7; i <= 52; i++ {
		switch i {
		case 22:
			tail = append(tail, "987654")
		case 52:
			tail = append(tail, strconv.Itoa(97<<8))
		default:
			tail = append(tail, "0")
		}
	}
	line := "4242 (sortie) (worker x) " + strings.Join(tail, " ") + "\n"
	got, err := parseStat([]byte(line))
	if err != nil {
		t.Fatalf("parseStat(%q) = %v, want nil", line, err)
	}
	want := procStat{state: 'Z', pgrp: 4242, startTime: "987654", exitStatus: 97 << 8}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(procStat{})); diff != "" {
		t.Errorf("parseStat(zombie) (-want +got):\n%s", diff)
	}
	if code, sig := waitStatus(got.exitStatus); code != 97 || sig != 0 {
		t.Errorf("waitStatus(%#x) = %d, %d, want exit code 97, no signal", got.exitStatus, code, sig)
	}
	if code, sig := waitStatus(9); code != -1 || sig != 9 {
		t.Errorf("waitStatus(9) = %d, %d, want -1 and signal 9 (SIGKILL)", code, sig)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1", "12 (x) S 1 notanumber 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = nil error, want an error", bad)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatalf("readStat(self) = %v, want nil", err)
	}
	if st.exited() || st.startTime == "" || st.startTime == "0" {
		t.Errorf("readStat(self) = %+v, want a live process with a start time", st)
	}
	if _, err := readStat(2147483647); err != errGone {
		t.Errorf("readStat(pid that does not exist) = %v, want errGone", err)
	}
}
