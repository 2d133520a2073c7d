package controlplanetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/controlplane"
)

// pagesNow is the time of the page walks: every configuration
// pendingSet makes pending is due by then, the not-yet-due ones are not.
const pagesNow = T0 + 1000

// maxWalkPages ends a walk that never reaches its last page.
const maxWalkPages = 1000

func pushKeyOf(c sortie.PushConfig) string { return string(c.RunID) + "/" + c.ID }

func sortByKey(cfgs []sortie.PushConfig) []sortie.PushConfig {
	out := slices.Clone(cfgs)
	slices.SortFunc(out, func(a, b sortie.PushConfig) int { return strings.Compare(pushKeyOf(a), pushKeyOf(b)) })
	return out
}

// pendingSet stores per pending configurations on each of runs new runs,
// a mix of new ones, ones delivered up to date and retries due at
// different times, and next to them on each run one Done and one not yet
// due configuration. It returns the pending ones as stored, by key.
func (f *fixture) pendingSet(runs, per int) []sortie.PushConfig {
	f.t.Helper()
	ps := f.cp
	ids := make([]sortie.RunID, runs)
	for i := range ids {
		ids[i] = f.submitted(T0 + int64(i)).ID
	}
	errs := make([]error, runs)
	parallel(runs, func(r int) {
		for k := range per + 2 {
			id := fmt.Sprintf("hook-%02d", k)
			if _, err := ps.PutPushConfig(f.ctx, pushConfig(ids[r], id), T0+100); err != nil {
				errs[r] = fmt.Errorf("PutPushConfig(%s, %s) = %w", ids[r], id, err)
				return
			}
			var d sortie.PushDelivery
			switch n := r*per + k; {
			case k == per:
				d = sortie.PushDelivery{DeliveredVersion: 1, Done: true}
			case k == per+1:
				d = sortie.PushDelivery{Failures: 2, NextAttemptMs: pagesNow + 5000, LastError: "HTTP 502"}
			case n%3 == 1:
				d = sortie.PushDelivery{Failures: 1, NextAttemptMs: T0 + 200 + int64(n%13), LastError: "HTTP 503"}
			case n%3 == 2:
				d = sortie.PushDelivery{DeliveredVersion: 1}
			default:
				continue
			}
			if err := ps.UpdatePushDelivery(f.ctx, ids[r], id, d); err != nil {
				errs[r] = fmt.Errorf("UpdatePushDelivery(%s, %s, %+v) = %w", ids[r], id, d, err)
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		f.t.Fatalf("storing %d runs' push configurations: %v", runs, err)
	}
	var want []sortie.PushConfig
	for _, id := range ids {
		for _, c := range f.listPush(id) {
			if !c.Delivery.Done && c.Delivery.NextAttemptMs <= pagesNow {
				want = append(want, c)
			}
		}
	}
	if len(want) != runs*per {
		f.t.Fatalf("pendingSet(%d, %d) stored %d pending configurations, want %d", runs, per, len(want), runs*per)
	}
	return sortByKey(want)
}

// walkPending reads every page of pending configurations with limit, at
// pagesNow plus the page number (a walk's clock may move), and calls
// between with what it read so far after each page but the last. It
// returns everything read, in the order read.
func (f *fixture) walkPending(limit int, between func(read []sortie.PushConfig)) []sortie.PushConfig {
	f.t.Helper()
	ps := f.cp
	var read []sortie.PushConfig
	token := ""
	for page := 1; page <= maxWalkPages; page++ {
		cfgs, next, err := ps.PendingPushConfigs(f.ctx, pagesNow+int64(page), limit, token)
		must(f.t, fmt.Sprintf("PendingPushConfigs(limit %d, page %d)", limit, page), err)
		if len(cfgs) > limit {
			f.t.Errorf("PendingPushConfigs(limit %d, page %d) = %d configurations, want at most %d", limit, page, len(cfgs), limit)
		}
		read = append(read, cfgs...)
		if next == "" {
			return read
		}
		token = next
		if between != nil {
			between(read)
		}
	}
	f.t.Fatalf("PendingPushConfigs(limit %d) gave a next page token after %d pages (%d configurations)", limit, maxWalkPages, len(read))
	return nil
}

// duplicates returns the keys read more than once.
func duplicates(read []sortie.PushConfig) []string {
	seen := map[string]int{}
	var dup []string
	for _, c := range read {
		if seen[pushKeyOf(c)]++; seen[pushKeyOf(c)] == 2 {
			dup = append(dup, pushKeyOf(c))
		}
	}
	return dup
}

// testPushPendingPages walks 250 pending configurations of 50 runs in
// pages of 7, of the default size and of the largest: each walk returns
// every one exactly once, as stored, and none that is Done or not yet due.
func testPushPendingPages(t *testing.T, f *fixture) {
	want := f.pendingSet(50, 5)
	for _, limit := range []int{7, controlplane.DefaultPendingPushLimit, controlplane.MaxPendingPushLimit} {
		read := f.walkPending(limit, nil)
		if dup := duplicates(read); len(dup) > 0 {
			t.Errorf("pages of %d returned %d configurations more than once: %v", limit, len(dup), dup)
		}
		if diff := cmp.Diff(want, sortByKey(read)); diff != "" {
			t.Errorf("pages of %d: the configurations read are not the %d pending ones (-want +got):\n%s", limit, len(want), diff)
		}
	}
}

// testPushPendingPagesChanging walks pages of 7 while, after each page,
// one configuration not yet read becomes Done and another is deleted, and
// so is the page's last one (where the next page continues): those may be
// left out, but every other pending configuration is read exactly once.
func testPushPendingPagesChanging(t *testing.T, f *fixture) {
	ps := f.cp
	want := f.pendingSet(10, 5)
	touched := map[string]bool{}
	read := f.walkPending(7, func(read []sortie.PushConfig) {
		last := read[len(read)-1]
		touched[pushKeyOf(last)] = true
		must(t, "DeletePushConfig(the page's last) between pages", ps.DeletePushConfig(f.ctx, last.RunID, last.ID))
		seen := map[string]bool{}
		for _, c := range read {
			seen[pushKeyOf(c)] = true
		}
		var unread []sortie.PushConfig
		for _, c := range want {
			if !seen[pushKeyOf(c)] && !touched[pushKeyOf(c)] {
				unread = append(unread, c)
			}
		}
		if len(unread) < 2 {
			return
		}
		done, gone := unread[len(unread)/2], unread[len(unread)-1]
		touched[pushKeyOf(done)], touched[pushKeyOf(gone)] = true, true
		d := done.Delivery
		d.Done = true
		must(t, "UpdatePushDelivery(Done) between pages", ps.UpdatePushDelivery(f.ctx, done.RunID, done.ID, d))
		must(t, "DeletePushConfig between pages", ps.DeletePushConfig(f.ctx, gone.RunID, gone.ID))
	})
	if len(touched) == 0 {
		t.Fatalf("pages of 7 over %d pending configurations: nothing changed between pages, want some", len(want))
	}
	if dup := duplicates(read); len(dup) > 0 {
		t.Errorf("pages of 7 returned configurations more than once: %v", dup)
	}
	var untouched, kept []sortie.PushConfig
	for _, c := range want {
		if !touched[pushKeyOf(c)] {
			untouched = append(untouched, c)
		}
	}
	for _, c := range read {
		if !touched[pushKeyOf(c)] {
			kept = append(kept, c)
		}
	}
	if diff := cmp.Diff(untouched, sortByKey(kept)); diff != "" {
		t.Errorf("pages of 7 with %d configurations done or deleted between pages skipped or changed pending ones (-want +got):\n%s", len(touched), diff)
	}
}

// testPushPendingForgedToken gives PendingPushConfigs tokens it did not
// make: each is refused with a ValidationError of page_token, and the
// token it did make still continues the walk.
func testPushPendingForgedToken(t *testing.T, f *fixture) {
	ps := f.cp
	run := f.submitted(T0)
	f.submitted(T0 + 1)
	for _, id := range []string{"a", "b", "c"} {
		f.putPush(pushConfig(run.ID, id), T0+2)
	}
	first, token := f.pending(T0+3, 1)
	if len(first) != 1 || token == "" {
		t.Fatalf("PendingPushConfigs(limit 1 of 3 pending) = %v, next %q, want 1 and a next page", pushIDs(first), token)
	}
	list, err := f.cp.List(f.ctx, sortie.ListQuery{PageSize: 1})
	must(t, "List(page size 1)", err)
	tampered := "A" + token[1:]
	if token[0] == 'A' {
		tampered = "B" + token[1:]
	}
	forged := map[string]string{
		"garbage":              "not a page token",
		"empty JSON":           base64.RawURLEncoding.EncodeToString([]byte(`{}`)),
		"a List page token":    list.NextPageToken,
		"a tampered token":     tampered,
		"a token with a tail":  token + ".AAAA",
		"a bad position":       controlplane.PushPosition{RunID: "not-a-run", ID: "a"}.Encode(),
		"an oversize token":    strings.Repeat("A", 2000),
		"a token of JSON null": base64.RawURLEncoding.EncodeToString([]byte(`null`)),
	}
	for name, tok := range forged {
		cfgs, next, err := ps.PendingPushConfigs(f.ctx, T0+3, 10, tok)
		var ve *sortie.ValidationError
		if !errors.As(err, &ve) || ve.Field != "page_token" || !errors.Is(err, sortie.ErrInvalidArgument) {
			t.Errorf("PendingPushConfigs(%s) = %v, next %q, %v; want a ValidationError of page_token", name, pushIDs(cfgs), next, err)
		}
	}
	rest, next, err := ps.PendingPushConfigs(f.ctx, T0+3, 10, token)
	must(t, "PendingPushConfigs(the token it made) after forged ones", err)
	if got := append(pushIDs(first), pushIDs(rest)...); len(got) != 3 || next != "" || len(duplicates(append(first, rest...))) > 0 {
		t.Errorf("PendingPushConfigs pages of 1 then 10 = %v, next %q, want the 3 configurations once each and no next page", got, next)
	}
}
