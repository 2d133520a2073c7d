// Package browsertest drives Debian's Chromium (package chromium;
// scripts/test installs it) headless through the DevTools protocol with
// chromedp, for the tests of the web UI (server/ui) and of
// examples/interactive-web. One browser serves a test package; each test
// gets a [Tab] in a fresh browser context (its own cookies) and sees the
// JavaScript dialogs and uncaught exceptions of its page. Without
// Chromium a test fails, naming the package to install; it never skips.
//
// Chromium runs with the flags this machine needs: headless as root
// without a sandbox or GPU, and nothing that reaches for the network on
// its own (no QUIC, background networking, component updates or sync),
// in a fresh user data directory.
package browsertest
