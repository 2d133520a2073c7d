package ui_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/sortie-run/sortie"
	"github.com/sortie-run/sortie/internal/browsertest"
	"github.com/sortie-run/sortie/internal/testwait"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}

// css is a CSS selector.
type css = chromedp.CSS

// visible waits for a CSS selector to be visible.
func visible(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(css(sel)) }

const pageTimeout = 20 * time.Second

// openRun opens the run page of id and waits for its header.
func openRun(t *testing.T, tb *browsertest.Tab, r *rig, id sortie.RunID) {
	t.Helper()
	tb.Run(t, "open the run page", pageTimeout, chromedp.Navigate(r.ui+"#/runs/"+string(id)), visible("#run-id"))
}

// timelineRows are the cursors and texts of the timeline's events.
func timelineRows(t *testing.T, tb *browsertest.Tab) []string {
	t.Helper()
	return browsertest.Eval[[]string](t, tb, `[...document.querySelectorAll('#timeline li.event')].map((li) => li.dataset.cursor + ' ' + li.querySelector('.text').textContent)`)
}

func TestListShowsANewRunWithoutAReload(t *testing.T) {
	r := newRig(t)
	for _, vars := range []string{`{"events":2}`, `{"fail":"no luck"}`, `{"events":1,"interrupt":"input-required"}`, `{"events":5}`} {
		r.submit(t, vars)
	}
	tb := browsertest.NewTab(t)
	tb.Run(t, "open the runs list", pageTimeout, chromedp.Navigate(r.ui), visible("#runs tr[data-run-id]"))
	live := r.submit(t, `{"until_cancelled":true,"interval_ms":200}`)
	r.cancelAtEnd(t, live.ID)
	submitted := time.Now()
	tb.Run(t, "wait for the new run in the list (no reload)", pageTimeout, visible(`#runs tr[data-run-id="`+string(live.ID)+`"]`))
	t.Logf("the new run was listed %v after its submit returned", time.Since(submitted).Round(time.Millisecond))
	testwait.Until(t, "five runs listed and charted, one working", pageTimeout, func() bool {
		return browsertest.Eval[bool](t, tb, `document.querySelectorAll('#runs tr[data-run-id]').length === 5 && !!document.querySelector('#runs tr[data-state="working"]') && document.querySelectorAll('svg.chart rect').length > 0`)
	})
	tb.Screenshot(t, "ui-runs")
}

func TestTimelineGetsEveryEventOfA50EventRunInOrder(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":50,"interval_ms":20}`)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "wait for the completed run", pageTimeout, visible("#run-head .state-completed"), visible("#result"))
	var want []string
	for i := 1; i <= 50; i++ {
		want = append(want, fmt.Sprintf("1.%d event %d of 50", i, i))
	}
	if diff := cmp.Diff(want, timelineRows(t, tb)); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	tb.Screenshot(t, "ui-run")
}

// A network blip mid-stream: the browser reconnects with Last-Event-ID
// and the timeline ends with every event once, in order.
func TestTimelineResumesAfterABlipWithoutDuplicates(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":40,"interval_ms":40}`)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	testwait.Until(t, "ten events shown", pageTimeout, func() bool {
		return browsertest.Eval[int](t, tb, `document.querySelectorAll('#timeline li.event').length`) >= 10
	})
	r.http.CloseClientConnections()
	tb.Run(t, "wait for the completed run", pageTimeout, visible("#run-head .state-completed"))
	testwait.Until(t, "40 events shown", pageTimeout, func() bool {
		return browsertest.Eval[int](t, tb, `document.querySelectorAll('#timeline li.event').length`) >= 40
	})
	var want []string
	for i := 1; i <= 40; i++ {
		want = append(want, fmt.Sprintf("1.%d event %d of 40", i, i))
	}
	if diff := cmp.Diff(want, timelineRows(t, tb)); diff != "" {
		t.Errorf("timeline after a blip (-want +got):\n%s", diff)
	}
}

func TestCancelFromThePage(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"until_cancelled":true,"interval_ms":50}`)
	r.cancelAtEnd(t, run.ID)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	if got := r.get(t, run.ID); got.CancelRequested {
		t.Fatalf("run cancel requested before the confirmation")
	}
	if shown := browsertest.Eval[bool](t, tb, `!!document.querySelector('#confirm-cancel').offsetParent`); shown {
		t.Fatalf("the confirmation is visible before the cancel button is clicked")
	}
	tb.Run(t, "ask to cancel", pageTimeout, visible("#timeline li.event"), chromedp.Click(css("#cancel")), visible("#confirm-cancel"),
		chromedp.SendKeys(css("#cancel-reason"), "from the page"))
	// The run page re-reads the run while events arrive; the confirmation
	// and the reason typed must outlive that (the header is rebuilt, so
	// a mark on the run ID's node goes away with a re-render).
	browsertest.Eval[string](t, tb, `document.querySelector('#run-id').dataset.mark = 'before'`)
	tb.Run(t, "wait for a re-render", pageTimeout, chromedp.Poll[chromedp.Void](`!document.querySelector('#run-id').dataset.mark`))
	if got := browsertest.Eval[string](t, tb, `document.querySelector('#confirm-cancel').offsetParent ? document.querySelector('#cancel-reason').value : 'confirmation closed'`); got != "from the page" {
		t.Fatalf("after a re-render the confirmation shows %q, want it open with the reason typed", got)
	}
	tb.Run(t, "confirm", pageTimeout, chromedp.Click(css("#confirm-cancel")))
	got := r.waitState(t, run.ID, sortie.StateCancelled)
	if !strings.Contains(got.Reason, "from the page") {
		t.Errorf("cancelled run's reason is %q, want the page's %q in it", got.Reason, "from the page")
	}
	tb.Run(t, "see it cancelled", pageTimeout, visible("#run-head .state-cancelled"))
}

func TestResumeFromTheFormCompletesTheRun(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":1,"interrupt":"input-required"}`)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "answer the prompt", pageTimeout, visible("#resume-input"),
		chromedp.SendKeys(css("#resume-input"), `{"answer": 42}`), chromedp.Click(css("#resume")))
	got := r.waitState(t, run.ID, sortie.StateCompleted)
	var res struct {
		ResumedWith json.RawMessage `json:"resumed_with"`
	}
	if err := json.Unmarshal(got.Result, &res); err != nil || string(res.ResumedWith) != `{"answer":42}` {
		t.Errorf("result %s (%v), want resumed_with {\"answer\":42}", got.Result, err)
	}
	tb.Run(t, "see it completed", pageTimeout, visible("#run-head .state-completed"), visible("#result"))
	if rows := timelineRows(t, tb); len(rows) != 2 || rows[0] != "1.1 event 1 of 1" || rows[1] != "2.1 event 1 of 1" {
		t.Errorf("timeline %q, want the event of each attempt", rows)
	}
}

const xss = `<img src=x onerror=alert(1)>`

func TestAttackerControlledTextRendersAsText(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":2,"text":"`+xss+`","output":{"html":"<script>alert(2)</script>`+xss+`"}}`)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "wait for the result", pageTimeout, visible("#result"), chromedp.Click(css("#result summary")))
	if rows := timelineRows(t, tb); !cmp.Equal(rows, []string{"1.1 " + xss, "1.2 " + xss}) {
		t.Errorf("timeline %q, want the markup as text", rows)
	}
	if got := browsertest.Eval[string](t, tb, `document.querySelector('#result pre').textContent`); got != "{\n  \"html\": \"<script>alert(2)</script>"+xss+"\"\n}" {
		t.Errorf("result shown as %q, want the JSON text", got)
	}
	if n := browsertest.Eval[int](t, tb, `document.querySelectorAll('#main img, #main script, #main [onerror]').length`); n != 0 {
		t.Errorf("the page made %d img/script/onerror elements from data, want none", n)
	}
	if d := tb.Dialogs(); len(d) != 0 {
		t.Errorf("dialogs opened: %q, want none", d)
	}
}

// A script of the page itself (as an injected one would be) cannot change
// anything without the CSRF token, though the browser sends the session.
func TestAStateChangeWithoutTheCSRFTokenIsRefused(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"until_cancelled":true,"interval_ms":50}`)
	r.cancelAtEnd(t, run.ID)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	status := browsertest.Eval[int](t, tb, `fetch('api/v1/runs/`+string(run.ID)+`/cancel', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}).then((r) => r.status)`)
	if status != 403 {
		t.Errorf("POST cancel from the page without the CSRF token = %d, want 403", status)
	}
	if got := r.get(t, run.ID); got.CancelRequested || got.State.Terminal() {
		t.Errorf("after the refused cancel the run is %s (cancel requested %v), want it running", got.State, got.CancelRequested)
	}
}

func TestTokenLoginKeepsTheTokenOutOfThePage(t *testing.T) {
	r := newRig(t, token)
	r.submit(t, `{"events":1}`)
	tb := browsertest.NewTab(t)
	tb.Run(t, "see the login form", pageTimeout, chromedp.Navigate(r.ui), visible("#token"))
	tb.Run(t, "log in with a wrong token", pageTimeout, chromedp.SendKeys(css("#token"), "a-wrong-token-of-enough-bytes"),
		chromedp.Click(css("#login-form button")), chromedp.Poll[chromedp.Void](`document.querySelector('#main .error').textContent.includes('refused')`))
	if v := browsertest.Eval[string](t, tb, `document.querySelector('#token').value`); v != "" {
		t.Errorf("after a refused login the token field holds %q, want it emptied", v)
	}
	tb.Run(t, "log in", pageTimeout, chromedp.SendKeys(css("#token"), token),
		chromedp.Click(css("#login-form button")), visible("#runs tr[data-run-id]"))
	if c := browsertest.Eval[string](t, tb, `document.cookie`); c != "" {
		t.Errorf("document.cookie = %q, want the session cookie hidden from scripts", c)
	}
	if n := browsertest.Eval[int](t, tb, `sessionStorage.length + localStorage.length`); n != 0 {
		t.Errorf("the page stored %d items in web storage, want none", n)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	r := newRig(t)
	failed := r.submit(t, `{"events":0,"fail":"no luck"}`)
	for range 27 {
		r.submit(t, `{"events":0}`)
	}
	testwait.Until(t, "28 runs ended", pageTimeout, func() bool {
		page, err := r.engine.List(t.Context(), sortie.ListQuery{State: sortie.StateCompleted, PageSize: 100})
		return err == nil && len(page.Runs) == 27
	})
	tb := browsertest.NewTab(t)
	tb.Run(t, "filter failed runs", pageTimeout, chromedp.Navigate(r.ui+"#/?state=failed"), visible(`#runs tr[data-run-id="`+string(failed.ID)+`"]`))
	if n := browsertest.Eval[int](t, tb, `document.querySelectorAll('#runs tr[data-run-id]').length`); n != 1 {
		t.Errorf("state=failed lists %d runs, want 1", n)
	}
	tb.Run(t, "list all, then the older page", pageTimeout, chromedp.Navigate(r.ui+"#/"),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#runs tr[data-run-id]').length === 25`),
		chromedp.Click(css(".pager button:nth-child(2)")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll('#runs tr[data-run-id]').length === 3`))
	if id := browsertest.Eval[string](t, tb, `document.querySelector('#runs tr[data-run-id]:last-child').dataset.runId`); id != string(failed.ID) {
		t.Errorf("the last run of the older page is %s, want the first submitted, %s", id, failed.ID)
	}
}

func TestPushConfigurationsFromThePage(t *testing.T) {
	r := newRig(t)
	run := r.submit(t, `{"events":1}`)
	tb := browsertest.NewTab(t)
	openRun(t, tb, r, run.ID)
	tb.Run(t, "add a push configuration", pageTimeout, visible("#push-form"),
		chromedp.SendKeys(css(`#push-form input[name="id"]`), "hook-1"),
		chromedp.SendKeys(css(`#push-form input[name="url"]`), "https://hooks.example.com/sortie"),
		chromedp.Click(css("#push-form button")), visible(`#push tr[data-config-id="hook-1"]`))
	cfgs, err := r.cp.ListPushConfigs(t.Context(), run.ID)
	if err != nil || len(cfgs) != 1 || cfgs[0].URL != "https://hooks.example.com/sortie" {
		t.Fatalf("ListPushConfigs = %+v, %v; want hook-1 to https://hooks.example.com/sortie", cfgs, err)
	}
	tb.Run(t, "delete it", pageTimeout, chromedp.Click(css(`#push tr[data-config-id="hook-1"] button`)),
		chromedp.WaitNotPresent(css(`#push tr[data-config-id="hook-1"]`)))
	if cfgs, err := r.cp.ListPushConfigs(t.Context(), run.ID); err != nil || len(cfgs) != 0 {
		t.Errorf("after delete ListPushConfigs = %+v, %v; want none", cfgs, err)
	}
}
