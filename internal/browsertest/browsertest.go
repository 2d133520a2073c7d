package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumEnv names a Chromium binary to use instead of the one on PATH.
const ChromiumEnv = "SORTIE_CHROMIUM"

// ScreenshotsEnv names the directory [Tab.Screenshot] saves in; default
// $TMPDIR/sortie-ui-screenshots.
const ScreenshotsEnv = "SORTIE_UI_SCREENSHOTS"

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

// Close stops the browser, if one started; a test package's TestMain
// calls it after m.Run.
func Close() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// chromiumPath finds Chromium: $SORTIE_CHROMIUM, else chromium on PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("the web UI's browser tests need Chromium, and none is on PATH: install Debian's package "+
		"(apt-get install -y chromium; scripts/test does it) or set %s to a Chromium binary", ChromiumEnv)
}

// startAttempts is how many times startBrowser starts Chromium before it
// gives up: on a loaded machine Chromium has crashed at start (crashpad's
// report, no DevTools line) where the next start ran.
const startAttempts = 3

func startBrowser() {
	path, err := chromiumPath()
	if err != nil {
		browser.err = err
		return
	}
	var errs []error
	for i := 1; i <= startAttempts; i++ {
		ctx, cancel, err := launch(path)
		if err == nil {
			browser.ctx, browser.cancel = ctx, cancel
			return
		}
		errs = append(errs, fmt.Errorf("start %d of %d: %w", i, startAttempts, err))
	}
	browser.err = fmt.Errorf("start Chromium %s: %w", path, errors.Join(errs...))
}

// launch starts one Chromium with a fresh profile directory and waits for
// it to evaluate a script; on an error it has stopped it and removed the
// directory.
func launch(path string) (context.Context, func(), error) {
	dir, err := os.MkdirTemp("", "sortie-ui-chromium-")
	if err != nil {
		return nil, nil, err
	}
	// The flags this machine's Chromium needs: headless as root without a
	// sandbox, and nothing that reaches for the network on its own.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 860))
	ctx, cancelCtx := chromedp.NewContext(alloc)
	cancel := func() { cancelCtx(); cancelAlloc(); os.RemoveAll(dir) }
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void]("1")); err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, cancel, nil
}

// Tab is one browser tab of a test, with what it saw: JavaScript dialogs
// (an alert would mean injected script ran) and uncaught exceptions.
type Tab struct {
	// Ctx is the tab's chromedp context.
	Ctx context.Context

	mu         sync.Mutex
	dialogs    []string
	exceptions []string
}

// NewTab opens a tab in a fresh browser context (its own cookies) of the
// package's one browser, started at the first call; the test fails at
// once without Chromium, and at its end if the page threw an uncaught
// exception.
func NewTab(t *testing.T) *Tab {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	tb := &Tab{Ctx: ctx}
	if err := chromedp.Listen(ctx, tb.listen); err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.exceptions) > 0 {
			t.Errorf("the page threw: %q", tb.exceptions)
		}
	})
	return tb
}

func (tb *Tab) listen(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch e := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		tb.dialogs = append(tb.dialogs, string(e.Type)+": "+e.Message)
		go func() { // answer it, so the page goes on; never from the listener
			_, _ = chromedp.Call(tb.Ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *runtime.EventExceptionThrown:
		tb.exceptions = append(tb.exceptions, e.ExceptionDetails.Text+" "+describe(e.ExceptionDetails.Exception))
	}
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	return o.Description
}

// Dialogs are the JavaScript dialogs the tab opened, "TYPE: MESSAGE".
func (tb *Tab) Dialogs() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.dialogs...)
}

// Run runs the actions with a deadline of timeout, failing the test with
// what the page shows when one fails.
func (tb *Tab) Run(t *testing.T, what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v; the page shows: %q", what, err, tb.MainText())
	}
}

// MainText is the text the page shows in <main>, for failure messages.
func (tb *Tab) MainText() string {
	ctx, cancel := context.WithTimeout(tb.Ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// Eval evaluates a JavaScript expression (awaiting a promise) into T.
func Eval[T any](t *testing.T, tb *Tab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.Ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Screenshot saves the tab's viewport as name.png in the directory of
// [ScreenshotsEnv].
func (tb *Tab) Screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sortie-ui-screenshots")
	}
	ctx, cancel := context.WithTimeout(tb.Ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
